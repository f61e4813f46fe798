"""Count the SQL statements and the kernel-file reads of one boost press, one dashboard load and one
sampler tick, over the tests' syncing box.

    PYTHONPATH=. python scripts/count_io.py [--statements] [--callers] [--past-runs N]

SQLite's trace callback sees every statement each connection runs; the host's open() is wrapped,
so every /proc or /sys file the kernel layer opens is counted. The app runs in this process on the
clock of scripts/api_answers.py (ticks only when this script takes one), so each figure is one
action's own work and nothing a background tick did. --statements prints each statement and each
file read; --callers also prints, under each, the app's functions it was run or read from.
--past-runs N gives the box a history of N finished checks of md0, each boosted and measured,
as a NAS that has run for months has (the page lists the last twenty).
"""

import argparse
import os
import re
import sqlite3
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.clock import Timeline
from app.config import Settings
from app.kernel import host
from app.live import sampler
from app.main import create_app
from app.notify import delivery
from scripts.api_answers import PASSWORD, SAME_SITE, Clock, Ticks, no_delivery, reshape_at
from tests.kernel_tree import KernelTree, act_like_md, syncing_box

APP = str(Path(__file__).resolve().parent.parent / "app")


def callers() -> str:
    """The app's frames on the stack, innermost last: where a statement or a read came from."""
    frames = [f for f in traceback.extract_stack() if f.filename.startswith(APP)]
    return " < ".join(
        f"{Path(f.filename).relative_to(APP).as_posix()}:{f.lineno} {f.name}"
        for f in reversed(frames[-5:])
    )


class Counts:
    def __init__(self) -> None:
        self.statements: list[tuple[str, str]] = []
        self.reads: list[tuple[str, str]] = []
        self.trace = False

    def connect(self, real: Callable[..., sqlite3.Connection]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real(*args, **kwargs)
            conn.set_trace_callback(self.statement)
            return conn

        return counted

    def statement(self, text: str) -> None:
        self.statements.append((text, callers() if self.trace else ""))

    def open(self, file: Any, *args: Any, **kwargs: Any) -> Any:
        self.reads.append((str(file), callers() if self.trace else ""))
        return open(file, *args, **kwargs)

    @contextmanager
    def of(self, what: str, show: bool) -> Iterator[None]:
        self.statements.clear()
        self.reads.clear()
        yield
        statements, reads = list(self.statements), list(self.reads)
        print(f"{what}: {len(statements)} SQL statements, {len(reads)} kernel-file reads")
        if show:
            shown = [(re.sub(r"\s+", " ", s).strip()[:110], c) for s, c in statements]
            self.show(shown, "")
            self.show(reads, "read ")

    def show(self, done: list[tuple[str, str]], prefix: str) -> None:
        """Each statement or path with its count, most repeated first, and where it came from."""
        by_what: dict[str, list[str]] = {}
        for what, where in done:
            by_what.setdefault(what, []).append(where)
        for what, wheres in sorted(by_what.items(), key=lambda item: -len(item[1])):
            print(f"    {len(wheres):3d} x {prefix}{what}")
            if self.trace:
                for where, count in Counter(wheres).most_common():
                    print(f"            {count} from {where}")


def add_past_runs(database: Path, count: int, now: float) -> None:
    """`count` finished checks of md0, a day apart, each with boost applied during it (an apply
    event, its ended session and op, and its measured effect)."""
    conn = sqlite3.connect(database)
    with conn:
        for k in range(count, 0, -1):
            started = now - k * 86400.0
            run = conn.execute(
                "INSERT INTO runs (array, action, started, finished, outcome, total_blocks)"
                " VALUES ('md0', 'check', ?, ?, 'completed', 2000000)",
                (started, started + 3600),
            ).lastrowid
            session = conn.execute(
                "INSERT INTO tuning_sessions (started, preset, arrays, ended, end_reason)"
                " VALUES (?, 'boost', '[\"md0\"]', ?, 'operations finished')",
                (started + 60, started + 3600),
            ).lastrowid
            op = conn.execute(
                "INSERT INTO tuning_ops (session_id, kind, preset, started, finished, state)"
                " VALUES (?, 'apply', 'boost', ?, ?, 'done')",
                (session, started + 60, started + 60),
            ).lastrowid
            conn.execute(
                "INSERT INTO events (ts, array, run_id, kind, detail)"
                " VALUES (?, 'md0', ?, 'apply', '{\"preset\": \"boost\"}')",
                (started + 60, run),
            )
            conn.execute(
                "INSERT INTO tuning_effects (op_id, array, run_id, preset, applied_at,"
                " before_kb_s, after_kb_s, ratio, measured_at)"
                " VALUES (?, 'md0', ?, 'boost', ?, 100000, 150000, 1.5, ?)",
                (op, run, started + 60, started + 1000),
            )
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", action="store_true", help="print each statement")
    parser.add_argument("--callers", action="store_true", help="and where each comes from")
    parser.add_argument("--past-runs", type=int, default=0, help="finished runs in its history")
    args = parser.parse_args()
    show = args.statements or args.callers
    counts = Counts()
    counts.trace = args.callers
    sqlite3.connect = counts.connect(sqlite3.connect)  # type: ignore[assignment]
    host.open = counts.open  # type: ignore[attr-defined]  # the module's open(): the kernel's
    work = Path(tempfile.mkdtemp(prefix="mdboost-count-io-"))
    tree = KernelTree(work / "kernel")
    syncing_box(tree)
    reshape_at(tree, 1000)
    os.environ["MDBOOST_ALLOWED_HOSTS"] = "testserver"
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=work / "mdboost.db", password=PASSWORD
    )
    clock, ticks = Clock(), Ticks()
    sampler.run_forever = ticks.run_forever  # type: ignore[assignment]
    delivery.run_forever = no_delivery  # type: ignore[assignment]
    app = create_app(settings)
    app.state.clock = Timeline(wall=clock.wall, mono=clock.mono)
    with TestClient(app) as client:

        def tick(done: int) -> None:
            reshape_at(tree, done)
            clock.now += 5.0
            ticks.take()

        for done in range(2000, 12000, 2000):
            tick(done * 50)
        add_past_runs(settings.db, args.past_runs, clock.now)
        client.post("/login", data={"password": PASSWORD}, follow_redirects=False)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/account").text)
        assert csrf is not None
        form = {"csrf_token": csrf[1]}
        with counts.of("one sampler tick", show):
            tick(600_000)
        with counts.of("one dashboard load (GET /)", show):
            assert client.get("/").status_code == 200
        polled = {"hx-request": "true"}
        with counts.of("one card poll (GET /ui/arrays/md2)", show):
            assert client.get("/ui/arrays/md2", headers=polled).status_code == 200
        with counts.of("one boost panel poll (GET /ui/boost)", show):
            assert client.get("/ui/boost", headers=polled).status_code == 200
        before = tree.snapshot()
        pressed = {**SAME_SITE, "hx-request": "true"}
        with counts.of("one boost press (POST /ui/boost on)", show):
            answer = client.post("/ui/boost", data={**form, "on": "true"}, headers=pressed)
            assert answer.status_code == 200, answer.text
        act_like_md(tree, before)
        tick(700_000)
        with counts.of("one tick while boosted", show):
            tick(800_000)
        with counts.of("one boost panel poll while boosted", show):
            assert client.get("/ui/boost", headers=polled).status_code == 200
        with counts.of("one boost press (POST /ui/boost off)", show):
            answer = client.post("/ui/boost", data={**form, "on": "false"}, headers=pressed)
            assert answer.status_code == 200, answer.text


if __name__ == "__main__":
    main()
