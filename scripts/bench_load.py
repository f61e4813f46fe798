"""Load: N concurrent clients on one page of a real `mdboost demo` (uvicorn in a subprocess).

Prints the server's RSS before, at its peak and after the load, the answers by status and the
latency of the successful ones (200 clients on / once grew RSS from 58 to 172 MB). A
benchmark prints figures; it asserts nothing.

    .venv/bin/python scripts/bench_load.py                  # this checkout
    .venv/bin/python scripts/bench_load.py --rev 226a9dd    # a commit, exported to a temp dir
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.server import Server, wait_for

ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB: now, and the peak so far."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def export(rev: str, into: Path) -> Path:
    """The tree of a commit (git archive), to serve an older version with the same venv."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


async def one_client(base: str, path: str, until: float, codes: Counter[str], ok_s: list[float]):
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                answer = await client.get(path, headers={"accept": "text/html"})
                codes[str(answer.status_code)] += 1
                if answer.status_code == 200:
                    ok_s.append(time.monotonic() - started)
                elif answer.status_code == 503:
                    await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
            except httpx.HTTPError as error:
                codes[type(error).__name__] += 1
                await asyncio.sleep(0.5)


async def load(base: str, path: str, clients: int, seconds: float) -> tuple[Counter[str], list]:
    codes: Counter[str] = Counter()
    ok_s: list[float] = []
    until = time.monotonic() + seconds
    await asyncio.gather(*(one_client(base, path, until, codes, ok_s) for _ in range(clients)))
    return codes, ok_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="serve this commit instead of the working tree")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--path", default="/")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mdboost-load-") as tmp:
        cwd = export(args.rev, Path(tmp) / "tree") if args.rev else ROOT
        state = Path(tmp) / "state"
        server = Server(["demo", "--state-dir", str(state)], cwd=cwd, log=Path(tmp) / "log")
        server.env.pop("MDBOOST_SAMPLE_SECONDS")  # the demo's own 5 s, as a user runs it
        with server:
            assert server.process is not None
            pid = server.process.pid
            wait_for(lambda: server.get("/api/runs")["runs"], 30, "the first run")
            for _ in range(5):
                httpx.get(server.base + args.path, timeout=30)
            idle, _ = rss_mib(pid)
            peak = [idle]
            done = threading.Event()

            def watch() -> None:
                while not done.wait(0.2):
                    peak.append(rss_mib(pid)[0])

            watcher = threading.Thread(target=watch)
            watcher.start()
            codes, ok_s = asyncio.run(load(server.base, args.path, args.clients, args.seconds))
            done.set()
            watcher.join()
            time.sleep(2)
            after, high_water = rss_mib(pid)
            alive = httpx.get(server.base + "/healthz", timeout=10).status_code
    version = args.rev or "working tree"
    print(f"{version}: {args.clients} clients x {args.seconds:g} s on {args.path}")
    print(
        f"RSS MiB: idle {idle:.0f}, peak {max(peak):.0f} (VmHWM {high_water:.0f}), "
        f"after {after:.0f}"
    )
    print(f"answers: {dict(sorted(codes.items()))}")
    if ok_s:
        ok_s.sort()
        p95 = ok_s[int(0.95 * (len(ok_s) - 1))]
        print(f"200s: {len(ok_s)}, median {statistics.median(ok_s):.2f} s, p95 {p95:.2f} s")
    print(f"/healthz after the load: {alive}")


if __name__ == "__main__":
    main()
