"""Half-open connections (slowloris) cannot lock the owner out.

Each test holds a few hundred real sockets that send the start of a request head and then
nothing, against the real uvicorn server, while a fresh client asks for /healthz and the page.
Linux routes all of 127.0.0.0/8 to the loopback device, so a socket bound to 127.0.0.N is
another client address.
"""

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.server import Server, tree_server

HEAD_START = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # and never the blank line that ends it
HEAD_TIMEOUT_S = 2.0
FRESH_CLIENT_S = 2.0  # the bar: a fresh client is answered within 2 s throughout
CONNECTIONS_PER_CLIENT = 16  # the default cap per client address


def open_half_heads(stack: ExitStack, port: int, sources: list[str]) -> list[socket.socket]:
    """One socket per source address, each sending an unfinished request head."""
    held = []
    for source in sources:
        sock = stack.enter_context(socket.socket())
        sock.settimeout(10)
        sock.bind((source, 0))
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(HEAD_START)
        except OSError:
            continue  # refused or reset at once: the guard's cap at work
        held.append(sock)
    return held


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed the socket (EOF, a 408 then EOF, or a reset)."""
    try:
        while chunk := sock.recv(4096):
            if not chunk.startswith(b"HTTP/1.1 408"):
                return False
    except ConnectionResetError:
        pass
    return True


def fresh_client_answers(server: Server, until: float) -> list[float]:
    """Ask for /healthz and the page from 127.0.0.1 until `until`; each answer's seconds."""
    took = []
    # The set-up page was offered already: the dashboard itself, not the redirect to set-up.
    seen = {"setup_seen": "1"}
    with httpx.Client(timeout=10, headers={"accept": "text/html"}, cookies=seen) as client:
        while time.monotonic() < until:
            for path in ("/healthz", "/"):
                started = time.monotonic()
                answer = client.get(server.base + path, headers={"connection": "close"})
                took.append(time.monotonic() - started)
                assert answer.status_code == 200, (path, answer.status_code)
    return took


@pytest.fixture
def server(box, tmp_path) -> Iterator[Server]:
    env = {"MDBOOST_HEADER_TIMEOUT_SECONDS": str(HEAD_TIMEOUT_S)}
    with tree_server(box, tmp_path, **env) as running:
        yield running


@pytest.mark.parametrize(
    "sources",
    [
        pytest.param(["127.0.0.1"] * 300, id="300-from-the-trusted-local-address"),
        pytest.param(["127.0.0.2"] * 300, id="300-from-one-lan-address"),
        pytest.param([f"127.0.1.{n % 60 + 1}" for n in range(300)], id="300-from-60-addresses"),
    ],
)
def test_half_open_heads_are_dropped_and_a_fresh_client_is_answered_meanwhile(server, sources):
    with ExitStack() as stack:
        opened = time.monotonic()
        held = open_half_heads(stack, server.port, sources)
        took = fresh_client_answers(server, until=opened + HEAD_TIMEOUT_S + 1)
        assert max(took) < FRESH_CLIENT_S, took
        for sock in held:  # recv blocks until the server closes it (10 s socket timeout)
            assert closed_by_server(sock)
        assert time.monotonic() - opened < HEAD_TIMEOUT_S + 3


def still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True  # nothing to read yet: the server holds it open
    except ConnectionResetError:
        return False


def test_one_address_gets_only_a_few_connections(server):
    with ExitStack() as stack:
        held = open_half_heads(stack, server.port, ["127.0.0.2"] * 40)
        # Accepted in order: once a later connection is answered, the guard has seen all 40.
        assert server.get("/healthz")["status"] == "ok"
        assert sum(still_open(sock) for sock in held) == CONNECTIONS_PER_CLIENT


def test_a_keep_alive_connection_cannot_stall_in_its_second_head(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = sock.recv(4096)
        while not answer.endswith(b"}"):  # the head and the JSON body may come apart
            answer += sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200")
        sock.sendall(HEAD_START)
        started = time.monotonic()
        assert closed_by_server(sock)
        assert time.monotonic() - started < HEAD_TIMEOUT_S + 2


def test_a_head_that_arrives_in_pieces_in_time_is_answered(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for piece in (b"GET /healthz HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            sock.sendall(piece)
            time.sleep(HEAD_TIMEOUT_S / 4)  # a slow but honest client, under the timeout
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")


def test_a_head_trickled_a_byte_at_a_time_is_still_dropped_at_its_deadline(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        started = time.monotonic()
        try:
            for byte in HEAD_START * 10:  # never the blank line; a byte every 0.2 s
                sock.sendall(bytes([byte]))
                if time.monotonic() - started > HEAD_TIMEOUT_S + 3:
                    break
                time.sleep(0.2)  # the attacker's pace, not synchronisation
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed it while bytes were still coming
        assert closed_by_server(sock)
        assert time.monotonic() - started < HEAD_TIMEOUT_S + 2
