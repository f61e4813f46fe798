"""Boost's estimate and the why-slow verdict beside it are made once a tick, by the sampler: the
forecast and diagnosis endpoints, the page and a push read them, and ask the database nothing of
boost's measurements per request (a page polled by three phones asked it three times a tick)."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.store import db
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    mdstat_text,
    progress,
    raid1,
    raid5,
    syncing_box,
)
from tests.server import wait_for
from tests.web.ticks import after_a_tick

# The estimate's own questions: boost's measured ratio on an array and on the box, the pace
# before a preset, the array's last check's pace. The page's boost panel reads the journal for
# itself (what is tuned, what was measured); the estimate beside it asks nothing more.
ESTIMATE_ASKS = (
    "SELECT ratio FROM",
    "SELECT array, ratio",
    "before_kb_s FROM",
    "action, speed_sum",
)


@pytest.fixture
def reshaping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite", sample_seconds=0.2
    )
    with TestClient(create_app(settings)) as client:
        done = 1000

        def moving() -> bool:
            """md2 gets on by a step each tick, until its forecast offers boost's estimate."""
            nonlocal done
            done += 2000
            tree.mdstat(
                mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1())
            )
            after_a_tick(client)
            return client.get("/api/arrays/md2/forecast").json()["boost"] is not None

        wait_for(moving, 30, "boost's estimate for md2")
        yield client


def test_the_forecast_and_the_diagnosis_read_the_estimate_the_tick_made(
    reshaping: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[list[str]] = []  # each request connection's statements
    connect = db.connect_for_request

    def traced(path: Path) -> sqlite3.Connection:
        conn = connect(path)
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        opened.append(statements)
        return conn

    monkeypatch.setattr(db, "connect_for_request", traced)
    for path in ("/api/arrays/md2/forecast", "/api/arrays/md2/diagnosis"):
        opened.clear()
        answer = reshaping.get(path)
        assert answer.status_code == 200, answer.text
        assert [s for statements in opened for s in statements] == [], path
    opened.clear()
    assert reshaping.get("/").status_code == 200
    asked = [s for statements in opened for s in statements]
    assert not [s for s in asked if any(ask in s for ask in ESTIMATE_ASKS)], asked
    forecast = reshaping.get("/api/arrays/md2/forecast").json()
    assert forecast["boost"]["ratio"] > 1.0 and forecast["boost_active"] is False
    snapshot = reshaping.app.state.snapshot_builder.snapshot  # type: ignore[attr-defined]
    md2 = snapshot.array("md2")
    assert md2 is not None and md2.boost is not None
