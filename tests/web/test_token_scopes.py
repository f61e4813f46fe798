"""A read token reads (the GET API, /metrics, the page when reads require
login) and is refused with 403 on every change; MDBOOST_READ_TOKEN sets one, the API and the
account page mint either kind. Through the real server."""

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.server import Server, tree_server

ADMIN = "admin-token-0123456789-0123456789abcdef"
READ = "read-token-0123456789-0123456789abcdef"
# Changes that are not in the API schema: the account page's forms and the page's own posts.
FORM_CHANGES = [
    ("POST", "/account/tokens"),
    ("POST", "/account/tokens/1/revoke"),
    ("POST", "/account/sign-out-everywhere"),
    ("POST", "/account/notify"),
    ("POST", "/account/notify/1/remove"),
    ("POST", "/account/notify/1/test"),
    ("POST", "/ui/boost"),
    ("POST", "/ui/boost/plan"),
    ("POST", "/ui/autotune"),
    ("POST", "/ui/revert"),
    ("POST", "/ui/schedules"),
    ("POST", "/ui/schedules/1/remove"),
]
# Plans write nothing (a preset's dry run, the disk-change planner): a read token may ask.
DRY_RUNS = {("POST", "/api/presets/boost/plan"), ("POST", "/api/plan")}


@pytest.fixture
def server(box, tmp_path) -> Iterator[Server]:
    env = {
        "MDBOOST_READ_REQUIRES_LOGIN": "true",
        "MDBOOST_API_TOKEN": ADMIN,
        "MDBOOST_READ_TOKEN": READ,
    }
    with tree_server(box, tmp_path, **env) as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def every_change(server: Server) -> list[tuple[str, str]]:
    schema = httpx.get(server.base + "/openapi.json", headers=bearer(ADMIN)).json()
    changes = [
        (method.upper(), re.sub(r"\{[^}]+\}", "1", path.replace("{name}", "boost")))
        for path, methods in schema["paths"].items()
        for method in methods
        if method.upper() not in ("GET", "HEAD")
    ]
    changes = [change for change in changes if change not in DRY_RUNS]
    assert len(changes) >= 8, changes  # the schema really lists the API's changes
    return changes + FORM_CHANGES


def assert_reads_but_changes_nothing(server: Server, box, token: str) -> None:
    with httpx.Client(base_url=server.base, headers=bearer(token), timeout=10) as client:
        for path in ("/api/arrays", "/api/tuning", "/api/runs", "/metrics", "/openapi.json"):
            assert client.get(path).status_code == 200, path
        page = client.get("/", headers={"accept": "text/html"})
        assert page.status_code == 200 and "md2" in page.text
        before = box.snapshot()
        tokens = client.get("/api/tokens", headers=bearer(ADMIN)).json()
        refused = {}
        for method, path in every_change(server):
            answer = client.request(method, path, json={"on": True, "name": "x"})
            refused[(method, path)] = answer.status_code
        assert set(refused.values()) == {403}, refused
        for path in ("/api/tokens", "/account"):
            assert client.get(path).status_code == 403, path
        assert box.snapshot() == before
        assert client.get("/api/tokens", headers=bearer(ADMIN)).json() == tokens


def test_the_environment_read_token_reads_and_is_refused_every_change(server, box):
    assert_reads_but_changes_nothing(server, box, READ)


def test_a_read_token_minted_through_the_api_reads_and_changes_nothing(server, box):
    status, made = server.request(
        "POST", "/api/tokens", {"name": "prometheus", "scope": "read"}, bearer(ADMIN)
    )
    assert status == 200 and made["scope"] == "read"
    listed = server.request("GET", "/api/tokens", headers=bearer(ADMIN))[1]["tokens"]
    assert [(t["name"], t["scope"]) for t in listed] == [("prometheus", "read")]
    assert_reads_but_changes_nothing(server, box, made["token"])


def test_the_account_page_mints_either_kind(server, box):
    with httpx.Client(base_url=server.base, headers=bearer(ADMIN), timeout=10) as client:
        made = {}
        for scope in ("read", "admin"):
            page = client.post("/account/tokens", data={"name": f"a {scope}", "scope": scope})
            assert page.status_code == 200
            made[scope] = re.search(r'id="new-token" value="(mdb_[^"]+)"', page.text).group(1)
        assert "(only reads)" in client.get("/account").text  # the new read token, listed
    assert_reads_but_changes_nothing(server, box, made["read"])
    status, _ = server.request("POST", "/api/boost", {"on": False}, bearer(made["admin"]))
    assert status == 200


def test_an_unknown_scope_is_refused(server):
    status, _ = server.request("POST", "/api/tokens", {"name": "x", "scope": "root"}, bearer(ADMIN))
    assert status == 422
