"""`mdboost demo` listens on this machine only unless --host says
otherwise, and on the open demo boost and auto-tune need no login while notification
destinations and API tokens need the password the demo prints at start. The real command."""

import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import httpx
import pytest

from tests import PROJECT_ROOT
from tests.server import Server, free_port, wait_for


def test_the_demo_listens_on_this_machine_only_by_default(tmp_path: Path):
    port = free_port()
    log = tmp_path / "demo.log"
    with log.open("wb") as out:
        demo = subprocess.Popen(
            # No --host.
            [
                sys.executable,
                "-m",
                "app",
                "demo",
                "--port",
                str(port),
                "--state-dir",
                str(tmp_path),
            ],
            cwd=PROJECT_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5))
        # Another address of this machine: a listener on every interface would accept it.
        with socket.socket() as other, pytest.raises(ConnectionRefusedError):
            other.bind(("127.0.0.2", 0))
            other.connect(("127.0.0.2", port))
    finally:
        demo.terminate()
        demo.wait(timeout=15)


def printed_password(log: Path) -> str:
    found = re.search(r"need the admin password (\S+)", log.read_text())
    assert found, log.read_text()
    return found.group(1)


def test_on_the_open_demo_notifications_and_tokens_need_the_printed_password(tmp_path: Path):
    demo = Server(["demo", "--state-dir", str(tmp_path)], log=tmp_path / "server.log")
    with demo, httpx.Client(base_url=demo.base) as anyone:
        for path, body in (
            ("/api/boost", {"on": True}),
            ("/api/autotune", {}),
            ("/api/revert", {}),
        ):
            status, answer = demo.request("POST", path, body)
            assert status not in (401, 403), (path, answer)  # open: that is the demo's point
        hook = {"url": "http://127.0.0.1:9/anywhere"}
        assert anyone.post("/account/notify", data=hook).status_code == 401
        assert anyone.post("/api/tokens", json={"name": "mine"}).status_code == 401
        assert anyone.get("/account").status_code in (401, 303)
        assert anyone.get("/setup").headers.get("location") == "/login"  # no taking it over
        password = printed_password(tmp_path / "server.log")
        assert anyone.post("/login", data={"password": "not the one"}).status_code != 303
        assert anyone.post("/login", data={"password": password}).status_code == 303
        page = anyone.get("/account")
        assert page.status_code == 200
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        made = anyone.post("/api/tokens", json={"name": "mine"}, headers={"x-csrf-token": csrf})
        assert made.status_code == 200 and made.json()["token"].startswith("mdb_")


def test_the_open_demos_api_refuses_cross_site_requests_as_its_forms_do(tmp_path: Path):
    """Any page the visitor opens could boost, revert or auto-tune the open demo with a simple
    cross-site request (text/plain needs no CORS preflight); its own page and tools may."""
    demo = Server(["demo", "--state-dir", str(tmp_path)], log=tmp_path / "server.log")
    simple = {"content-type": "text/plain"}
    with demo, httpx.Client(base_url=demo.base) as anyone:
        for path in ("/api/boost", "/api/revert", "/api/autotune"):
            for cross_site in (
                {"origin": "http://evil.example", "sec-fetch-site": "cross-site"},
                {"origin": "http://evil.example"},  # a browser without Sec-Fetch-Site
                {"origin": "null", "sec-fetch-site": "cross-site"},  # a sandboxed frame
            ):
                answer = anyone.post(path, content=b'{"on": true}', headers=simple | cross_site)
                assert answer.status_code == 403, (path, cross_site, answer.text)
        own_page = {"origin": demo.base, "sec-fetch-site": "same-origin"}
        assert anyone.post("/api/revert", json={}, headers=own_page).status_code != 403
        assert anyone.post("/api/revert", json={}).status_code != 403  # curl: no Origin
