"""The Host allow-list stops DNS rebinding; the names a NAS is really opened by pass."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.web.hosts import HostAllowList, host_name
from tests.kernel_tree import KernelTree, mdstat_text, raid5


@pytest.fixture
def client(tree: KernelTree, tmp_path: Path) -> Iterator[TestClient]:
    tree.mdstat(mdstat_text(raid5()))
    tree.md("md2")
    settings = Settings(
        proc_root=tree.proc,
        sys_root=tree.sys,
        db=tmp_path / "mdboost.db",
        allowed_hosts="mdboost.example.org,*.nas.example.net",
    )
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.mark.parametrize(
    "host",
    [
        "192.168.1.20:8080",
        "192.168.1.20",
        "[fe80::1]:8080",
        "[::1]",
        "localhost:8080",
        "LOCALHOST",
        "diskstation:8080",
        "DiskStation",
        "nas-2.:8080",
        "diskstation.local:8080",
        "DiskStation.local.",
        socket.gethostname(),
        "mdboost.example.org",
        "nas.home.arpa:8080",
        "DiskStation.lan",
        "diskstation.internal:5000",
        "media.nas.example.net",
    ],
)
def test_the_names_a_nas_is_opened_by_are_allowed(client, host):
    assert client.get("/api/arrays", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8080",
        "evil.example",
        "mdboost.example.org.evil.example",
        "192.168.1.20.evil.example",
        "home.arpa",
        "evil.local.example",
        "evil.lan.example",
        "nas.example.net",
        "[fe80::1",
        "192.168.1.20:80x",
        "",
    ],
)
def test_any_other_name_gets_403_saying_how_to_allow_it(client, host):
    answer = client.get("/api/arrays", headers={"host": host, "accept": "application/json"})
    assert answer.status_code == 403
    assert "MDBOOST_ALLOWED_HOSTS" in answer.json()["detail"]
    assert "content-security-policy" in answer.headers


@pytest.mark.parametrize("accept", ["*/*", "text/html,application/xhtml+xml,*/*;q=0.8", ""])
def test_a_refused_name_gets_a_page_unless_json_was_asked_for(client, accept):
    """curl, a browser and a client that names no type all read a page, on the API's paths too."""
    for path in ("/", "/api/arrays"):
        answer = client.get(path, headers={"host": "nas.example.org:8080", "accept": accept})
        assert answer.status_code == 403
        assert answer.headers["content-type"].startswith("text/html")
        assert 'MDBOOST_ALLOWED_HOSTS: "nas.example.org"' in answer.text.replace("&quot;", '"')


def test_every_page_and_the_openapi_schema_refuse_a_rebound_name(client):
    evil = {"host": "evil.example:8080", "origin": "http://evil.example:8080"}
    for path in ("/", "/api/tuning", "/api/runs", "/api/presets", "/openapi.json", "/docs"):
        assert client.get(path, headers=evil).status_code == 403, path
    page = client.get("/", headers={**evil, "accept": "text/html"})
    assert page.status_code == 403 and "<h1>403</h1>" in page.text
    assert "&#x27;evil.example:8080&#x27;" in page.text  # escaped
    assert client.post("/setup", headers=evil, data={"password": "x" * 12}).status_code == 403


def test_the_allow_list_parses_host_headers_strictly():
    assert host_name("[::1]:8080") == "::1"
    assert host_name("NAS.local.:80") == "nas.local"
    assert host_name("[::1]x") is None
    allowed = HostAllowList([" mdboost.example.org ", "*.nas.example.net", ""])
    assert allowed.allows("a.b.nas.example.net") and not allowed.allows("nas.example.net.evil")
    assert not allowed.allows(None)
