"""Security through the real server: login, CSRF, tokens, throttling, headers, limits, logs."""

import re
import sqlite3

import httpx

from tests.server import Server
from tests.server import tree_server as serve

PASSWORD = "correct horse battery"
TOKEN = "env-token-0123456789-0123456789abcdef0123456789"


def csrf_of(client: httpx.Client) -> str:
    page = client.get("/account")
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def test_reading_is_open_and_changing_needs_an_admin(box, tmp_path):
    before = box.snapshot()
    with serve(box, tmp_path, MDBOOST_PASSWORD=PASSWORD) as server:
        client = httpx.Client(base_url=server.base)
        assert client.get("/api/arrays").status_code == 200
        assert client.get("/", headers={"accept": "text/html"}).status_code == 200
        for path, body in (("/api/boost", {"on": True}), ("/api/revert", None)):
            answer = client.post(path, json=body)
            assert answer.status_code == 401
            assert "login required" in answer.json()["detail"]
        assert client.post("/api/presets/boost/apply").status_code == 401
        assert client.get("/account", headers={"accept": "text/html"}).status_code == 303
    assert box.snapshot() == before


def test_login_session_cookie_csrf_and_logout(box, tmp_path):
    with serve(box, tmp_path, MDBOOST_PASSWORD=PASSWORD) as server:
        client = httpx.Client(base_url=server.base)
        assert client.post("/login", data={"password": "wrong"}).status_code == 401
        answer = client.post("/login", data={"password": PASSWORD})
        assert answer.status_code == 303
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        no_csrf = client.post("/api/boost", json={"on": True})
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["detail"]
        wrong = client.post("/api/boost", json={"on": True}, headers={"x-csrf-token": "nope"})
        assert wrong.status_code == 403
        token = csrf_of(client)
        ok = client.post("/api/boost", json={"on": True}, headers={"x-csrf-token": token})
        assert ok.status_code == 200, ok.text
        assert box.read("sys/block/md2/md/stripe_cache_size") == "16384\n"
        assert client.post("/logout").status_code == 303
        again = client.post("/api/boost", json={"on": False}, headers={"x-csrf-token": token})
        assert again.status_code == 401


def test_bearer_tokens_from_the_environment_and_from_the_page(box, tmp_path):
    with serve(box, tmp_path, MDBOOST_PASSWORD=PASSWORD, MDBOOST_API_TOKEN=TOKEN) as server:
        client = httpx.Client(base_url=server.base)
        bad = client.post("/api/revert", headers={"authorization": "Bearer wrong"})
        assert bad.status_code == 401 and bad.json()["detail"] == "invalid API token"
        env = {"authorization": f"Bearer {TOKEN}"}
        made = client.post("/api/tokens", json={"name": "backup script"}, headers=env)
        assert made.status_code == 200
        created = made.json()["token"]
        mine = {"authorization": f"Bearer {created}"}
        assert client.post("/api/boost", json={"on": True}, headers=mine).status_code == 200
        (listed,) = client.get("/api/tokens", headers=env).json()["tokens"]
        assert listed["name"] == "backup script" and "token" not in listed
        assert client.delete(f"/api/tokens/{listed['id']}", headers=env).status_code == 200
        assert client.post("/api/revert", headers=mine).status_code == 401
        assert client.post("/api/revert", headers=env).status_code == 200
    stored = sqlite3.connect(tmp_path / "data" / "mdboost.db").execute(
        "SELECT token_hash FROM api_tokens"
    )
    assert [row[0] for row in stored] != [created]
    log = (tmp_path / "server.log").read_text()
    for secret in (PASSWORD, TOKEN, created):
        assert secret not in log


def test_one_time_setup_stores_a_salted_scrypt_hash(box, tmp_path):
    with serve(box, tmp_path) as server:
        client = httpx.Client(base_url=server.base)
        assert client.get("/login").headers["location"] == "/setup"
        short = client.post("/setup", data={"password": "short", "confirm": "short"})
        assert short.status_code == 400 and "at least 8" in short.text
        done = client.post("/setup", data={"password": PASSWORD, "confirm": PASSWORD})
        assert done.status_code == 303 and "mdboost_session" in done.headers["set-cookie"]
        stranger = httpx.Client(base_url=server.base)
        second = stranger.post("/setup", data={"password": "x" * 12, "confirm": "x" * 12})
        assert second.status_code == 400 and "already set" in second.text
        assert stranger.post("/login", data={"password": PASSWORD}).status_code == 303
    (stored,) = sqlite3.connect(tmp_path / "data" / "mdboost.db").execute(
        "SELECT hash FROM auth_password"
    )
    assert stored[0].startswith("scrypt$16384$8$1$") and PASSWORD not in stored[0]


def test_login_is_throttled_after_five_failures(box, tmp_path):
    with serve(box, tmp_path, MDBOOST_PASSWORD=PASSWORD) as server:
        client = httpx.Client(base_url=server.base)
        for _ in range(5):
            assert client.post("/login", data={"password": "guess"}).status_code == 401
        blocked = client.post("/login", data={"password": PASSWORD})
        assert blocked.status_code == 429
        assert 0 < int(blocked.headers["retry-after"]) <= 61


def test_security_headers_no_cors_and_a_body_limit(box, tmp_path):
    with serve(box, tmp_path, MDBOOST_API_TOKEN=TOKEN) as server:
        client = httpx.Client(base_url=server.base)
        for path in ("/", "/api/arrays", "/healthz", "/static/app.css", "/nope"):
            answer = client.get(path, headers={"origin": "http://evil.example"})
            csp = answer.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
            assert "frame-ancestors 'none'" in csp
            assert answer.headers["x-frame-options"] == "DENY"
            assert "access-control-allow-origin" not in answer.headers
        preflight = client.options(
            "/api/boost",
            headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
        )
        assert "access-control-allow-origin" not in preflight.headers
        huge = client.post(
            "/api/boost",
            content=b'{"on": true, "pad": "' + b"x" * 100_000 + b'"}',
            headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
        )
        assert huge.status_code == 413 and "larger than" in huge.json()["detail"]
        missing = client.get("/api/nowhere")
        assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}
        page = client.get("/ui/arrays/md9", headers={"accept": "text/html"})
        assert page.status_code == 404 and "<h1>404</h1>" in page.text
        assert "Traceback" not in page.text


def test_reading_can_require_login_too(box, tmp_path):
    with serve(
        box, tmp_path, MDBOOST_PASSWORD=PASSWORD, MDBOOST_READ_REQUIRES_LOGIN="true"
    ) as server:
        client = httpx.Client(base_url=server.base)
        assert client.get("/api/arrays").status_code == 401
        assert (
            client.get("/", headers={"accept": "text/html"}).headers["location"] == "/login?next=/"
        )
        assert client.get("/healthz").status_code == 200  # Docker's HEALTHCHECK stays open
        client.post("/login", data={"password": PASSWORD})
        assert client.get("/api/arrays").status_code == 200


def test_the_demo_allows_changes_without_login(tmp_path):
    with Server(["demo", "--state-dir", str(tmp_path)]) as server:
        status, body = server.request("POST", "/api/boost", {"on": True})
        assert status == 200 and body["ok"] is True, body
