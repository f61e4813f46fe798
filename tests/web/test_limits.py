"""Bodies too large (chunked too) or too slow are refused; overload gets 503."""

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.kernel_tree import KernelTree
from tests.server import Server, tree_server

TOKEN = "env-token-0123456789-0123456789abcdef0123456789"


@pytest.fixture
def server(box: KernelTree, tmp_path) -> Iterator[Server]:
    env = {"MDBOOST_API_TOKEN": TOKEN, "MDBOOST_BODY_TIMEOUT_SECONDS": "1"}
    with tree_server(box, tmp_path, **env) as running:
        yield running


def test_a_chunked_body_over_the_limit_gets_413(server):
    def chunks() -> Iterator[bytes]:
        yield b'{"on": true, "pad": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'

    answer = httpx.post(
        server.base + "/api/boost",
        content=chunks(),  # no Content-Length: Transfer-Encoding: chunked
        headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )
    assert answer.status_code == 413 and "larger than" in answer.json()["detail"]


def test_a_body_that_never_arrives_gets_408(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/boost HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        started = time.monotonic()
        answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - started < 5
    assert server.get("/healthz")["status"] == "ok"


def test_a_body_that_arrives_in_pieces_in_time_is_read_whole(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        body = b'{"on": false}'
        sock.sendall(
            b"POST /api/boost HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body[:5]
        )
        time.sleep(0.3)
        sock.sendall(body[5:])
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")


def test_overload_gets_503_with_retry_after_and_the_server_stays_up(box, tmp_path):
    env = {"MDBOOST_MAX_ACTIVE_REQUESTS": "1", "MDBOOST_MAX_QUEUED_REQUESTS": "2"}
    with tree_server(box, tmp_path, **env) as server:

        def page(_: int) -> httpx.Response:
            page_headers = {"accept": "text/html"}
            seen = {"setup_seen": "1"}  # the dashboard, not the first visit's set-up redirect
            return httpx.get(server.base + "/", headers=page_headers, cookies=seen, timeout=60)

        with ThreadPoolExecutor(40) as pool:
            answers = list(pool.map(page, range(40)))
        codes = [a.status_code for a in answers]
        assert set(codes) == {200, 503}, codes
        busy = next(a for a in answers if a.status_code == 503)
        assert busy.headers["retry-after"] == "2" and "busy" in busy.json()["detail"]
        assert server.get("/healthz")["status"] == "ok"
        assert httpx.get(server.base + "/static/app.css").status_code == 200
        assert page(0).status_code == 200
