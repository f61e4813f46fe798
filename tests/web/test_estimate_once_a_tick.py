"""Boost's estimate and the why-slow verdict beside it are made once a tick, by the sampler: the
forecast and diagnosis endpoints, the page and a push read them, and ask the database nothing of
boost's measurements per request (a page polled by three phones asked it three times a tick)."""

import asyncio
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.clock import Timeline
from app.config import Settings
from app.live import sampler
from app.live.sampler import Sampler
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
from tests.live.test_snapshot_builder import at_the_disks_limit
from tests.web.test_headline import headline

SAME_SITE = {"origin": "null", "sec-fetch-site": "same-origin"}
# The estimate's own questions: boost's measured ratio on an array and on the box, the pace
# before a preset, the array's last check's pace. The page's boost panel reads the journal for
# itself (what is tuned, what was measured); the estimate beside it asks nothing more.
ESTIMATE_ASKS = (
    "SELECT ratio FROM",
    "SELECT array, ratio",
    "before_kb_s FROM",
    "action, speed_sum",
)


class Steps:
    """The app's clock and its sampler's ticks, taken only when the test says: each tick is 5 s
    of md2's reshape later, and nothing ticks between a request and the next."""

    def __init__(self, tree: KernelTree) -> None:
        self.tree = tree
        self.now = 1_790_000_000.0
        self.done = 100_000
        self.take: Callable[[], None] | None = None

    def tick(self, count: int = 1) -> None:
        """`count` ticks of md2's reshape, its members at their limit all the while."""
        assert self.take is not None
        for _ in range(count):
            self.done += 100_000
            reshape = progress("reshape", self.done, RESHAPE_TOTAL)
            self.tree.mdstat(mdstat_text(raid5(progress=reshape), raid1()))
            self.now += 5.0
            self.take()

    def wall(self) -> float:
        return self.now

    def mono(self) -> float:
        return self.now - 1_790_000_000.0 + 1000.0

    async def run_forever(
        self, taken: Sampler, stop: asyncio.Event, interval: Any, on_tick: Any, first: Any = None
    ) -> None:
        def take() -> None:
            tick = taken.sample_once()
            tick.diagnoses["md2"] = at_the_disks_limit(self.now)
            on_tick(tick)

        self.take = take
        await stop.wait()


@pytest.fixture
def steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, Steps]]:
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    steps = Steps(tree)
    monkeypatch.setattr(sampler, "run_forever", steps.run_forever)
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")
    # The open demo's settings: boost needs no login.
    db_path = tmp_path / "db.sqlite"
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=db_path, demo=True, demo_open=True
    )
    app = create_app(settings)
    app.state.clock = Timeline(wall=steps.wall, mono=steps.mono)
    with TestClient(app) as client:
        steps.tick(5)
        yield client, steps


def test_the_forecast_and_the_diagnosis_read_the_estimate_the_tick_made(
    steps: tuple[TestClient, Steps], monkeypatch: pytest.MonkeyPatch
) -> None:
    reshaping = steps[0]
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


def why_slow(html: str) -> str:
    """md2's why-slow sentence on the page, "" when its card shows none."""
    found = re.search(r'id="why-md2">\s*<summary>([^<]*)</summary>', html)
    return found[1] if found else ""


def test_the_page_never_says_nothing_to_tune_beside_boost_s_estimate(
    steps: tuple[TestClient, Steps],
) -> None:
    """md2's disks at their limit, boost offering more than x1.1: the why-slow card names that
    gain; boost on, it says nothing more is to tune; the answer to the revert and every load
    after it offer the estimate again, and no verdict beside it says "Nothing to tune"."""
    client, box = steps
    said = headline(client.get("/").text)
    offered = re.search(r"Boost could cut it to .*×(\d+\.\d+) by an estimate", said)
    assert offered is not None and float(offered[1]) > 1.1, said
    why = why_slow(client.get("/").text)
    assert f"Boost could still make them about ×{offered[1]} faster" in why, why
    assert client.post("/api/boost", json={"on": True}).status_code == 200
    box.tick(2)
    assert "Nothing to tune" in why_slow(client.get("/").text)
    reverted = client.post("/ui/revert", headers={"hx-request": "true", **SAME_SITE})
    assert reverted.status_code == 200, reverted.text
    # The answer's headline (out of band) offers boost again; no verdict of the boosted knobs.
    assert f"×{offered[1]} by an estimate" in headline(reverted.text)
    assert "Nothing to tune" not in reverted.text
    for _ in range(3):
        page = client.get("/").text
        assert f"×{offered[1]} by an estimate" in headline(page)
        assert "Nothing to tune" not in why_slow(page) and "None" not in headline(page)
        box.tick()
    assert f"about ×{offered[1]} faster" in why_slow(page)
