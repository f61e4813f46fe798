"""The sampler owns the present. No GET reads /proc or /sys, and what a poll costs does
not grow with the length of the run it shows."""

import importlib
import os
import pkgutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.store import db
from app.web import deps, routes
from app.web.request_db import RequestConnection
from tests.kernel_tree import RESHAPE_TOTAL, KernelTree, syncing_box

# The page's polls and the JSON a phone or a dashboard reads again and again.
POLLS = (
    "/",
    "/ui/arrays/md2",
    "/ui/boost",
    "/api/arrays",
    "/api/arrays/md2/forecast",
    "/api/arrays/md2/diagnosis",
    "/api/pool/forecast",
    "/api/runs",
    "/api/tuning",
    "/metrics",
    "/healthz",
)

# Which kernel roots the audit hook watches: set only while a test polls (audit hooks cannot be
# removed, so the one hook stays and watches nothing otherwise).
_watched: list[str] = []
_opened: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _watched or event not in ("open", "os.listdir", "os.scandir"):
        return
    path = args[0] if args else None
    if isinstance(path, str | bytes | os.PathLike):
        name = os.fsdecode(path)
        if any(name.startswith(root) for root in _watched):
            _opened.append(name)


sys.addaudithook(_audit)


def get_routes() -> list[str]:
    """Every GET route of the app, with md2 and the open run for its path parameters."""
    found = []
    for info in pkgutil.iter_modules(routes.__path__):
        module = importlib.import_module(f"{routes.__name__}.{info.name}")
        for route in module.router.routes:
            if isinstance(route, APIRoute) and "GET" in route.methods:
                found.append(route.path.replace("{name}", "md2").replace("{run_id}", "1"))
    return found


def reshape_history(path: Path, samples: int, events: int) -> None:
    """md2's reshape so far: `samples` 5 s samples and `events` diagnosis events, as the
    sampler would have stored them; it ends where syncing_box() shows md2 now (1000 blocks)."""
    conn = db.connect(path)
    db.migrate(conn, Path(__file__).parents[2] / "migrations")
    now = conn.execute("SELECT strftime('%s', 'now')").fetchone()[0]
    start = float(now) - 60 - samples * 5.0
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO runs (id, array, action, started, total_blocks) "
            "VALUES (1, 'md2', 'reshape', ?, ?)",
            (start, RESHAPE_TOTAL),
        )
        conn.executemany(
            "INSERT INTO samples (ts, array, run_id, state, status, action, percent, done_blocks,"
            " total_blocks, speed_kb_s, speed_min_kb_s, speed_max_kb_s, stripe_cache_size)"
            " VALUES (?, 'md2', 1, 'active', 'UUUU', 'reshape', 0.0, ?, ?, 6000, 10000, 200000,"
            " 513)",
            [(start + 5.0 * i, i * 1000 // samples, RESHAPE_TOTAL) for i in range(samples)],
        )
        conn.executemany(
            "INSERT INTO events (ts, array, run_id, kind, detail) "
            "VALUES (?, 'md2', 1, 'diagnosis', '{}')",
            [(start + 5.0 * i * samples / events,) for i in range(events)],
        )
    conn.close()


@pytest.fixture
def reshaping(tree: KernelTree, tmp_path: Path) -> KernelTree:
    syncing_box(tree)
    return tree


def app_settings(tree: KernelTree, db_path: Path) -> Settings:
    return Settings(
        proc_root=tree.proc,
        sys_root=tree.sys,
        db=db_path,
        sample_seconds=3600,  # the start-up tick only: the polls below run between two ticks
        demo=True,
        demo_open=True,
        password=PASSWORD,  # the open demo's: the account page needs it
    )


PASSWORD = "the open demo's password"


def test_no_get_route_reads_proc_or_sys(reshaping: KernelTree, tmp_path: Path) -> None:
    reshape_history(tmp_path / "db.sqlite", samples=50, events=5)
    with TestClient(create_app(app_settings(reshaping, tmp_path / "db.sqlite"))) as client:
        assert client.post("/login", data={"password": PASSWORD}).status_code == 200
        client.app.state.tuner.apply("boost")  # a session: its knobs are shown too
        routes = get_routes()
        assert set(POLLS) <= set(routes)
        _watched[:] = [str(reshaping.proc), str(reshaping.sys)]
        try:
            for _ in range(3):
                for route in routes:
                    answer = client.get(route)
                    assert answer.status_code in (200, 303, 404), (route, answer.status_code)
        finally:
            _watched.clear()
    assert _opened == []


class CountingConnections:
    """Per-request connections whose SQLite virtual-machine steps are counted: the work a query
    does, rows read included, whatever the machine's speed."""

    STEP = 10  # the progress handler runs every STEP instructions

    def __init__(self, path: Path) -> None:
        self.path = path
        self.steps = 0
        self.queries = 0

    def __call__(self) -> Iterator[sqlite3.Connection]:
        conn = db.connect(self.path)
        conn.set_progress_handler(self._step, self.STEP)
        conn.set_trace_callback(self._query)
        try:
            yield conn
        finally:
            conn.close()

    def _step(self) -> int:
        self.steps += self.STEP
        return 0

    def _query(self, statement: str) -> None:
        self.queries += 1


def poll_work(tree: KernelTree, db_path: Path) -> dict[str, tuple[int, int]]:
    """(SQLite steps, queries) of one GET of each poll, after one warm-up round."""
    counting = CountingConnections(db_path)
    app = create_app(app_settings(tree, db_path))
    app.dependency_overrides[deps.get_db] = counting
    work = {}
    with TestClient(app) as client:
        for route in POLLS:
            assert client.get(route).status_code == 200, route
        for route in POLLS:
            counting.steps = counting.queries = 0
            assert client.get(route).status_code == 200, route
            work[route] = (counting.steps, counting.queries)
    return work


def test_a_polls_work_does_not_grow_with_the_run(tmp_path: Path) -> None:
    """The same polls over a run of 100 samples and one of 20,000 (a day at 5 s, 400 verdict
    changes): the same queries and, within a few rows' worth, the same SQLite work."""
    work = {}
    for samples, events in ((100, 2), (20_000, 400)):
        tree = KernelTree(tmp_path / f"kernel-{samples}")
        syncing_box(tree)
        path = tmp_path / f"{samples}.sqlite"
        reshape_history(path, samples, events)
        work[samples] = poll_work(tree, path)
    for route in POLLS:
        (short_steps, short_queries), (long_steps, long_queries) = (
            work[100][route],
            work[20_000][route],
        )
        assert long_queries == short_queries, route
        assert long_steps <= short_steps * 1.1 + 200, (route, short_steps, long_steps)


def test_a_request_s_own_connection_caches_less_and_never_creates_the_file(
    tmp_path: Path,
) -> None:
    """It lives for one request: 128 KiB of pages, not the long-lived connections' 512 (512 KiB
    filled and freed by each page load stayed in the server's heap). It opens the file start-up
    made, in WAL, and a missing file is an error rather than a new, empty database."""
    path = tmp_path / "m.db"
    with pytest.raises(sqlite3.OperationalError):
        RequestConnection(path).get()
    assert not path.exists()
    db.connect(path).close()  # start-up
    connection = RequestConnection(path)
    conn = connection.get()
    assert connection.get() is conn  # one per request
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == -db.REQUEST_CACHE_KIB == -128
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    connection.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        conn.execute("SELECT 1")
