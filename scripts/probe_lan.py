"""LAN attack probes: another device attacks a real `mdboost serve` on the syncing box from
127.0.0.2 and up while the owner, at 127.0.0.1 with the admin token, polls the page and reverts.

Prints, per attack, how many of the owner's pages were answered (200) within 2 s, Revert's
answers and slowest time, /healthz's, and the host load before and after. A benchmark prints
figures; it asserts nothing.

    .venv/bin/python scripts/probe_lan.py                       # every attack, this checkout
    .venv/bin/python scripts/probe_lan.py --attack flood --rev fbd8c60   # an older commit

Attacks: unread (4 connections pipeline 300 GET /openapi.json, never read), trickle (16
addresses x 16 connections hold a POST body back), flood (3 addresses x 16 keep-alive loops of
GET /), samples (2 addresses loop /api/arrays/md2/samples?points=5000), swagger (6 addresses
loop the 1.7 MB Swagger bundle, gzipped).
"""

import argparse
import asyncio
import contextlib
import re
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.bench_load import export
from tests.kernel_tree import KernelTree, syncing_box
from tests.server import Server, tree_server

TOKEN = "probe-owner-token-0123456789-0123456789"
OWNER_S = 2.0


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


@contextlib.contextmanager
def unread(server: Server) -> Iterator[None]:
    pipelined = b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 300
    with contextlib.ExitStack() as stack:
        for _ in range(4):
            sock = stack.enter_context(socket.socket())
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.bind(("127.0.0.2", 0))
            sock.connect(("127.0.0.1", server.port))
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.send(pipelined)
        yield


@contextlib.contextmanager
def trickle(server: Server) -> Iterator[None]:
    head = b"POST /api/plan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{"
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        socks = []
        for n in range(16 * 16):
            sock = stack.enter_context(socket.socket())
            sock.bind((f"127.0.4.{n // 16 + 1}", 0))
            with contextlib.suppress(OSError):
                sock.connect(("127.0.0.1", server.port))
                sock.sendall(head)
                socks.append(sock)

        def drip() -> None:  # a byte a second on each: never the whole body
            while not stop.wait(1.0):
                for sock in socks:
                    with contextlib.suppress(OSError):
                        sock.send(b" ")

        dripping = threading.Thread(target=drip)
        dripping.start()
        try:
            yield
        finally:
            stop.set()
            dripping.join()


def looping(server: Server, addresses: list[str], ask: bytes) -> Callable[[], Iterator[None]]:
    @contextlib.contextmanager
    def attack(_: Server) -> Iterator[None]:
        stop = threading.Event()

        async def loop(address: str) -> None:
            while not stop.is_set():
                try:
                    reader, writer = await asyncio.open_connection(
                        "127.0.0.1", server.port, local_addr=(address, 0)
                    )
                    while not stop.is_set():
                        writer.write(ask)
                        head = await reader.readuntil(b"\r\n\r\n")
                        length = re.search(rb"content-length: (\d+)", head.lower())
                        await reader.readexactly(int(length.group(1)) if length else 0)
                        if b"connection: close" in head.lower():
                            break
                    writer.close()
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    await asyncio.sleep(0.05)

        async def all_loops() -> None:
            await asyncio.gather(*(loop(a) for a in addresses))

        thread = threading.Thread(target=asyncio.run, args=(all_loops(),))
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    return attack  # type: ignore[return-value]


def owner(server: Server, seconds: float) -> dict[str, list[tuple[int, float]]]:
    answers: dict[str, list[tuple[int, float]]] = {}
    until = time.monotonic() + seconds
    headers = {"authorization": f"Bearer {TOKEN}", "accept": "text/html"}
    with httpx.Client(base_url=server.base, timeout=30, headers=headers) as client:
        while time.monotonic() < until:
            for method, path in (("GET", "/healthz"), ("GET", "/"), ("POST", "/api/revert")):
                started = time.monotonic()
                try:
                    status = client.request(method, path).status_code
                except httpx.HTTPError:
                    status = 0
                answers.setdefault(path, []).append((status, time.monotonic() - started))
    return answers


def report(name: str, answers: dict[str, list[tuple[int, float]]], before: str) -> None:
    pages = answers.get("/", [])
    in_time = sum(1 for status, took in pages if status == 200 and took < OWNER_S)
    print(f"{name}: host load {before} before, {load()} after")
    print(f"  owner's pages answered 200 within {OWNER_S:g} s: {in_time} of {len(pages)}")
    for path in ("/api/revert", "/healthz"):
        got = answers.get(path, [])
        codes = Counter(status for status, _ in got)
        slowest = max((took for _, took in got), default=0.0)
        print(f"  {path}: {dict(codes)}, slowest {slowest:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--attack", choices=["unread", "trickle", "flood", "samples", "swagger"], nargs="*"
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="the owner's watch")
    parser.add_argument("--rev", help="serve this commit instead of the checkout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = export(args.rev, root / "src") if args.rev else Path(__file__).parent.parent
        tree = KernelTree(root / "kernel")
        syncing_box(tree)
        for name in args.attack or ["unread", "trickle", "flood", "samples", "swagger"]:
            (root / name).mkdir()
            server = tree_server(tree, root / name, MDBOOST_API_TOKEN=TOKEN)
            server.cwd = cwd
            with server:
                page = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/html\r\n\r\n"
                samples = b"GET /api/arrays/md2/samples?points=5000 HTTP/1.1\r\n"
                samples += b"Host: 127.0.0.1\r\n\r\n"
                swagger = b"GET /static/vendor/swagger-ui-bundle.js HTTP/1.1\r\n"
                swagger += b"Host: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n"
                attacks = {
                    "unread": unread,
                    "trickle": trickle,
                    "flood": looping(server, [f"127.0.5.{n % 3 + 1}" for n in range(48)], page),
                    "samples": looping(server, ["127.0.6.1", "127.0.6.2"] * 4, samples),
                    "swagger": looping(server, [f"127.0.7.{n + 1}" for n in range(6)], swagger),
                }
                before = load()
                with attacks[name](server):  # type: ignore[operator]
                    time.sleep(1.0)
                    answers = owner(server, args.seconds)
                report(name, answers, before)


if __name__ == "__main__":
    main()
