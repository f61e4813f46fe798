"""Slowloris probe: N sockets send an unfinished request head to a real `mdboost demo`
and hold it, while a fresh client asks for /healthz and the page from 127.0.0.1.

Prints how many held sockets the server kept open, how long until it dropped them, and the
fresh client's answers (status codes and slowest seconds) while they were held. A benchmark
prints figures; it asserts nothing.

    .venv/bin/python scripts/probe_slowloris.py --sockets 260                 # from 127.0.0.2
    .venv/bin/python scripts/probe_slowloris.py --sockets 300 --addresses 60  # 127.0.1.1-60
    .venv/bin/python scripts/probe_slowloris.py --rev edb1952 --hold 20       # an older commit
"""

import argparse
import selectors
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.bench_load import export
from tests.server import Server

HEAD_START = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def hold(port: int, count: int, addresses: int) -> list[socket.socket]:
    held = []
    for n in range(count):
        sock = socket.socket()
        sock.bind((f"127.0.1.{n % addresses + 1}" if addresses > 1 else "127.0.0.2", 0))
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(HEAD_START)
        except OSError:
            sock.close()
            continue
        sock.setblocking(False)
        held.append(sock)
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=260)
    parser.add_argument("--addresses", type=int, default=1, help="source addresses (127.0.1.N)")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds to watch")
    parser.add_argument("--rev", help="serve this commit instead of the checkout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = export(args.rev, Path(tmp) / "src") if args.rev else Path(__file__).parent.parent
        server = Server(["demo", "--state-dir", str(Path(tmp) / "state")], cwd=cwd).start()
        try:
            opened = time.monotonic()
            held = hold(server.port, args.sockets, args.addresses)
            selector = selectors.DefaultSelector()
            for sock in held:
                selector.register(sock, selectors.EVENT_READ)
            dropped_after: list[float] = []
            codes: Counter[int] = Counter()
            took: list[float] = []
            open_at_start = None
            with httpx.Client(timeout=30, headers={"connection": "close"}) as client:
                while time.monotonic() < opened + args.hold:
                    for key, _ in selector.select(timeout=0):
                        selector.unregister(key.fileobj)
                        dropped_after.append(time.monotonic() - opened)
                    if open_at_start is None:
                        open_at_start = len(selector.get_map())
                    for path in ("/healthz", "/"):
                        started = time.monotonic()
                        try:
                            codes[client.get(server.base + path).status_code] += 1
                        except httpx.HTTPError:
                            codes[0] += 1
                        took.append(time.monotonic() - started)
            print(f"sockets sent a half head: {len(held)} of {args.sockets}")
            print(f"held open after the first fresh request: {open_at_start}")
            print(f"still open after {args.hold:.0f} s: {len(selector.get_map())}")
            if dropped_after:
                print(
                    f"dropped: {len(dropped_after)}, after median "
                    f"{statistics.median(dropped_after):.2f} s, max {max(dropped_after):.2f} s"
                )
            print(f"fresh client: {dict(codes)}, slowest {max(took):.2f} s over {len(took)}")
            for sock in held:
                sock.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
