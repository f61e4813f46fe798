"""Set-up, login and sessions hold against another site, a proxy's header and a race."""

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.web.proxy import TrustedProxies
from tests.kernel_tree import KernelTree, mdstat_text, raid5
from tests.server import tree_server

PASSWORD = "correct horse battery"
CROSS_SITE = {"origin": "http://evil.example", "sec-fetch-site": "cross-site"}


def settings(tree: KernelTree, tmp_path: Path, **extra: object) -> Settings:
    tree.mdstat(mdstat_text(raid5()))
    tree.md("md2")
    return Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db", **extra)


@pytest.fixture
def fresh(tree: KernelTree, tmp_path: Path) -> Iterator[TestClient]:
    """A fresh install: no password yet."""
    with TestClient(create_app(settings(tree, tmp_path)), follow_redirects=False) as client:
        yield client


def stored_password(tmp_path: Path) -> list[tuple[str]]:
    return (
        sqlite3.connect(tmp_path / "mdboost.db")
        .execute("SELECT hash FROM auth_password")
        .fetchall()
    )


def test_another_site_cannot_claim_the_one_time_setup(fresh, tmp_path):
    form = {"password": "attacker-password", "confirm": "attacker-password"}
    refused = (
        CROSS_SITE,
        {"origin": "http://evil.example"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site", "origin": "http://testserver:5000"},  # DSM's own port
        {"origin": "null"},
    )
    for headers in refused:
        answer = fresh.post("/setup", data=form, headers=headers)
        assert answer.status_code == 403, headers
        assert "mdboost_session" not in answer.headers.get("set-cookie", "")
    assert stored_password(tmp_path) == []
    # A browser's own form post: Referrer-Policy no-referrer makes its Origin "null".
    same_site = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert fresh.post("/setup", data=form, headers=same_site).status_code == 303


def test_another_site_cannot_sign_in_or_out(tree, tmp_path):
    with TestClient(
        create_app(settings(tree, tmp_path, password=PASSWORD)), follow_redirects=False
    ) as client:
        assert (
            client.post("/login", data={"password": PASSWORD}, headers=CROSS_SITE).status_code
            == 403
        )
        assert client.post("/login", data={"password": PASSWORD}).status_code == 303
        assert client.post("/logout", headers=CROSS_SITE).status_code == 403
        assert client.get("/account").status_code == 200  # still signed in


def test_the_login_throttle_counts_the_address_the_proxy_saw(box, tmp_path):
    """Behind DSM's proxy with FORWARDED_ALLOW_IPS=*: the proxy appends the address it saw."""
    env = {"MDBOOST_PASSWORD": PASSWORD, "FORWARDED_ALLOW_IPS": "*"}
    with tree_server(box, tmp_path, **env) as server:
        client = httpx.Client(base_url=server.base)

        def login(password: str, forwarded_for: str) -> int:
            headers = {"x-forwarded-for": forwarded_for}
            return client.post("/login", data={"password": password}, headers=headers).status_code

        rotating = [login("guess", f"10.0.{i}.1, 192.168.1.50") for i in range(30)]
        assert rotating == [401] * 5 + [429] * 25
        assert login("guess", "192.168.1.10, 192.168.1.60") == 401  # names the admin's address
        assert login(PASSWORD, "192.168.1.10") == 303  # the admin is not locked out


def test_parallel_wrong_logins_are_counted_before_the_password_is_hashed(box, tmp_path):
    # A queue long enough for all 40 from one address (a quarter of it is one address's share):
    # load shedding's 503 is not what this test is about.
    with tree_server(box, tmp_path, MDBOOST_MAX_QUEUED_REQUESTS="256") as server:
        setup = httpx.post(server.base + "/setup", data={"password": PASSWORD, "confirm": PASSWORD})
        assert setup.status_code == 303  # a stored scrypt hash: each check takes a while

        def wrong_login(_: int) -> int:
            return httpx.post(
                server.base + "/login", data={"password": "guess"}, timeout=60
            ).status_code

        with ThreadPoolExecutor(40) as pool:
            codes = list(pool.map(wrong_login, range(40)))
        assert codes.count(401) <= 5 and codes.count(401) + codes.count(429) == 40, codes


@pytest.mark.parametrize(
    ("trusted", "peer", "forwarded_for", "client"),
    [
        ("127.0.0.1", "127.0.0.1", "6.6.6.6, 192.168.1.50", "192.168.1.50"),
        ("127.0.0.1", "192.168.1.99", "6.6.6.6", "192.168.1.99"),  # not a proxy: header ignored
        ("172.18.0.1,10.0.0.0/8", "172.18.0.1", "6.6.6.6, 192.168.1.50, 10.1.2.3", "192.168.1.50"),
        ("*", "172.18.0.1", "6.6.6.6, [fe80::1]:4711", "fe80::1"),
        ("127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1", "", "127.0.0.1"),
    ],
)
def test_the_client_is_the_rightmost_hop_that_is_not_a_trusted_proxy(
    trusted, peer, forwarded_for, client
):
    assert TrustedProxies(trusted).client(peer, forwarded_for) == client


def app_client(app_settings: Settings) -> TestClient:
    return TestClient(create_app(app_settings), follow_redirects=False)


def test_a_new_mdboost_password_ends_every_session(tree, tmp_path):
    with app_client(settings(tree, tmp_path, password=PASSWORD)) as first:
        assert first.post("/login", data={"password": PASSWORD}).status_code == 303
        cookie = first.cookies["mdboost_session"]
    with app_client(settings(tree, tmp_path, password=PASSWORD)) as same:
        same.cookies.set("mdboost_session", cookie)
        assert same.get("/api/tokens").status_code == 200  # a restart alone ends nothing
    with app_client(settings(tree, tmp_path, password="a brand new password")) as changed:
        changed.cookies.set("mdboost_session", cookie)
        assert changed.get("/api/tokens").status_code == 401
        assert changed.get("/account", headers={"accept": "text/html"}).status_code == 303
        assert changed.post("/api/tokens", json={"name": "x"}).status_code == 401
    with app_client(settings(tree, tmp_path)) as unset:  # back to the set-up page (none yet)
        unset.cookies.set("mdboost_session", cookie)
        assert unset.get("/api/tokens").status_code == 401


def test_a_reset_set_up_password_ends_every_session(fresh, tmp_path):
    assert fresh.post("/setup", data={"password": PASSWORD, "confirm": PASSWORD}).status_code == 303
    assert fresh.get("/api/tokens").status_code == 200
    with sqlite3.connect(tmp_path / "mdboost.db") as db:
        db.execute("DELETE FROM auth_password")  # the owner's reset: the set-up page returns
    other = {"password": "another password", "confirm": "another password"}
    assert (
        TestClient(fresh.app).post("/setup", data=other, follow_redirects=False).status_code == 303
    )
    assert fresh.get("/api/tokens").status_code == 401


def test_sign_out_everywhere_ends_every_browser_session(tree, tmp_path):
    with app_client(settings(tree, tmp_path, password=PASSWORD)) as phone:
        laptop = TestClient(phone.app, follow_redirects=False)
        for browser in (phone, laptop):
            assert browser.post("/login", data={"password": PASSWORD}).status_code == 303
        page = phone.get("/account")
        assert "Sign out everywhere" in page.text
        csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
        ended = phone.post("/account/sign-out-everywhere", data={"csrf_token": csrf})
        assert ended.status_code == 303 and ended.headers["location"] == "/login"
        assert phone.get("/api/tokens").status_code == 401
        assert laptop.get("/api/tokens").status_code == 401


def test_revoking_a_token_revokes_the_tokens_it_made(tree, tmp_path):
    env_token = "env-token-0123456789-0123456789abcdef0123456789"
    with app_client(settings(tree, tmp_path, password=PASSWORD, api_token=env_token)) as client:

        def bearer(token: str) -> dict[str, str]:
            return {"authorization": f"Bearer {token}"}

        def make(name: str, by: str) -> str:
            made = client.post("/api/tokens", json={"name": name}, headers=bearer(by))
            assert made.status_code == 200
            return str(made.json()["token"])

        first = make("first", env_token)
        child = make("child", first)
        grandchild = make("grandchild", child)
        sibling = make("sibling", env_token)
        listed = client.get("/api/tokens", headers=bearer(env_token)).json()["tokens"]
        ids = {t["name"]: t["id"] for t in listed}
        revoked = client.delete(f"/api/tokens/{ids['first']}", headers=bearer(env_token))
        assert revoked.status_code == 200
        for token in (first, child, grandchild):
            assert client.get("/api/tokens", headers=bearer(token)).status_code == 401
        assert client.get("/api/tokens", headers=bearer(sibling)).status_code == 200
        listed = client.get("/api/tokens", headers=bearer(env_token)).json()["tokens"]
        made_by = {t["name"]: t["parent_id"] for t in listed}
        assert made_by == {
            "first": None,
            "child": ids["first"],
            "grandchild": ids["child"],
            "sibling": None,
        }


def test_the_api_schema_and_its_page_need_a_login_when_reading_does(tree, tmp_path):
    closed = settings(tree, tmp_path, password=PASSWORD, read_requires_login=True)
    with app_client(closed) as client:
        for path in ("/openapi.json", "/docs"):
            assert client.get(path).status_code == 401, path
        assert (
            client.get("/docs", headers={"accept": "text/html"}).headers["location"]
            == "/login?next=/docs"
        )
        assert client.post("/login", data={"password": PASSWORD}).status_code == 303
        assert "/api/arrays" in client.get("/openapi.json").json()["paths"]
        assert client.get("/docs").status_code == 200
    with app_client(settings(tree, tmp_path, password=PASSWORD)) as open_reading:
        assert open_reading.get("/openapi.json").status_code == 200


def test_signing_in_returns_to_where_the_owner_was_and_only_on_this_site(tree, tmp_path):
    """`next` brings the owner back to the boost panel; never to another site."""
    with TestClient(
        create_app(settings(tree, tmp_path, password=PASSWORD)), follow_redirects=False
    ) as client:
        page = client.get("/login", params={"next": "/#boost"}).text
        assert 'name="next" value="/#boost"' in page
        for given, expected in [
            ("/#boost", "/#boost"),
            ("//evil.example/", "/"),
            ("https://evil.example/", "/"),
            ("/\\evil.example", "/"),
        ]:
            answer = client.post("/login", data={"password": PASSWORD, "next": given})
            assert answer.headers["location"] == expected, given


def test_the_sign_in_page_says_when_a_session_has_ended(tree, tmp_path):
    with TestClient(create_app(settings(tree, tmp_path, password=PASSWORD))) as client:
        assert "session has ended" not in client.get("/login").text
        client.cookies.set("mdboost_session", "a-session-that-ended")
        assert "session has ended" in client.get("/login").text


def test_a_fresh_boxs_first_visit_goes_to_set_up_and_then_may_just_watch(fresh):
    """The README's promise: the first visit offers the set-up page, no "Sign in" tap needed;
    once it was shown the owner may watch without a password; htmx polls and the API never move."""
    page = {"accept": "text/html,application/xhtml+xml"}
    first = fresh.get("/", headers=page)
    assert (first.status_code, first.headers["location"]) == (303, "/setup")
    assert fresh.get("/api/arrays").status_code == 200
    assert fresh.get("/", headers={**page, "hx-request": "true"}).status_code == 200
    setup = fresh.get("/setup", headers=page)
    assert "Just watch for now" in setup.text
    assert fresh.get("/", headers=page).status_code == 200  # the cookie says it was offered
    fresh.cookies.clear()
    assert fresh.post("/setup", data={"password": PASSWORD, "confirm": PASSWORD}).status_code == 303
    fresh.cookies.clear()
    assert fresh.get("/", headers=page).status_code == 200  # a password is set: no set-up
