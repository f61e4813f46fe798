"""GET /metrics in the app: open like the GET API, guarded with it, and never reads the kernel."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from app.config import Settings
from app.kernel.host import Host
from app.main import create_app
from tests.kernel_tree import KernelTree, syncing_box
from tests.server import wait_for

TOKEN = "metrics-token-0123456789-0123456789abcdef"


@pytest.fixture
def client(
    tree: KernelTree, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[TestClient]:
    syncing_box(tree)
    settings = Settings(
        proc_root=tree.proc,
        sys_root=tree.sys,
        db=tmp_path / "db.sqlite",
        sample_seconds=3600,  # one tick at start-up, then none while the test reads
        **getattr(request, "param", {}),
    )
    with TestClient(create_app(settings)) as test_client:
        wait_for(
            lambda: test_client.app.state.snapshot_builder.snapshot.arrays, 10, "the first tick"
        )
        yield test_client


def test_metrics_are_open_by_default_in_prometheus_text_format(client):
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert 'mdboost_md_sync_action{action="reshape",device="md2"} 1.0' in answer.text
    assert 'node_md_blocks{device="md2"}' in answer.text


def test_a_scrape_reads_no_kernel_file(client, monkeypatch):
    opened = []
    real_read = Host.read

    def counting_read(self, path, *args):
        opened.append(path)
        return real_read(self, path, *args)

    monkeypatch.setattr(Host, "read", counting_read)
    for _ in range(20):
        assert client.get("/metrics").status_code == 200
    assert opened == []


@pytest.mark.parametrize("client", [{"metrics_node_compat": False}], indirect=True)
def test_node_compat_off_leaves_node_exporter_to_node_exporter(client):
    text = client.get("/metrics").text
    assert "node_md_" not in text and "mdboost_md_info" in text


@pytest.mark.parametrize(
    "client", [{"read_requires_login": True, "api_token": SecretStr(TOKEN)}], indirect=True
)
def test_with_read_requires_login_a_scraper_sends_the_bearer_token(client):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200 and "mdboost_md_info" in answer.text


@pytest.mark.parametrize("client", [{"demo": True, "demo_open": True}], indirect=True)
def test_the_tuning_state_is_the_switchs_from_the_second_the_owner_presses(client):
    """/metrics and GET /api/tuning read what is tuned from the one Job, published by the write
    itself: no tick runs between the press and the reads (one tick an hour here)."""

    def scraped() -> list[str]:
        lines = client.get("/metrics").text.splitlines()
        return [line for line in lines if line.startswith("mdboost_tuning_state_info{")]

    assert scraped() == ['mdboost_tuning_state_info{state="off"} 1.0']
    assert client.post("/api/boost", json={"on": True}).status_code == 200
    assert client.get("/api/tuning").json()["state"]["kind"] == "boost"
    assert scraped() == ['mdboost_tuning_state_info{state="boost"} 1.0']
    assert client.post("/api/boost", json={"on": False}).status_code == 200
    assert client.get("/api/tuning").json()["state"]["kind"] == "off"
    assert scraped() == ['mdboost_tuning_state_info{state="off"} 1.0']
