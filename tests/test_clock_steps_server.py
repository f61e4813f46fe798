"""The real server under libfaketime while NTP steps its wall clock.

uvicorn runs with Debian's libfaketime preloaded: the wall clock follows a file this test rewrites
(FAKETIME_TIMESTAMP_FILE, read on every call with FAKETIME_NO_CACHE), the monotonic clock stays
true (FAKETIME_DONT_FAKE_MONOTONIC). Over a temp /proc and /sys tree whose reshape advances at
SPEED_KB_S of true time, in jumps as md's progress does, the clock steps back 1 h, forward 1 day
and back to true. The time left (eta minus the server's own now) must stay within a few % of the
truth, no stall may be queued, a boost with MDBOOST_BOOST_HOURS must stay on, the chart must have
no hole, and each step must be one event of the run.
"""

import glob
import itertools
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import apt
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    mdstat_text,
    progress,
    raid1,
    raid5,
    syncing_box,
)
from tests.server import Server, forecast_ok, tree_server, wait_for

SPEED_KB_S = 6000
JUMP_S = 1.0  # md's progress arrives in jumps: most 0.2 s ticks see none
START = RESHAPE_TOTAL // 10
# (what the clock does, FAKETIME's offset from the true time after it, the step in hours)
STEPS = (("back 1 h", "-1h", -1), ("forward 1 day", "+23h", 24), ("back to true", "+0", -23))
TOLERANCE = 0.05  # of the true time left
WAIT_S = 180.0  # for conditions on a loaded machine (2 cores shared by several test runs)


def libfaketime() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    return found[0] if found else None


@pytest.fixture(scope="module")
def faketime_lib() -> str:
    """Debian's libfaketime; CI installs it (package `faketime`), elsewhere the test says how."""
    if libfaketime() is None and apt.may_install() and shutil.which("apt-get"):
        apt.install("faketime")
    lib = libfaketime()
    if lib is None:
        pytest.skip(apt.not_installed("faketime"))
    return lib


class AdvancingReshape:
    """Writes md2's reshape into /proc/mdstat as the kernel would: SPEED_KB_S of true time,
    shown in jumps every JUMP_S; /proc/mdstat is replaced whole, never seen half written."""

    def __init__(self, tree: KernelTree) -> None:
        self.tree = tree
        self.t0 = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self._write()

    def done_at(self, mono: float) -> int:
        shown = (mono - self.t0) // JUMP_S * JUMP_S
        return int(START + SPEED_KB_S * shown)

    def true_left_s(self) -> float:
        """What really is left: (total - done now) at the true pace."""
        done = START + SPEED_KB_S * (time.monotonic() - self.t0)
        return (RESHAPE_TOTAL - done) / SPEED_KB_S

    def _write(self) -> None:
        text = progress("reshape", self.done_at(time.monotonic()), RESHAPE_TOTAL, SPEED_KB_S)
        target = self.tree.proc / "mdstat"
        draft = target.with_suffix(".new")
        draft.write_text(mdstat_text(raid5(progress=text), raid1()))
        os.replace(draft, target)

    def _run(self) -> None:
        while not self.stop.wait(0.05):  # the kernel's pace, not a synchronisation
            self._write()

    def __enter__(self) -> "AdvancingReshape":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
def reshape(tree: KernelTree) -> Iterator[AdvancingReshape]:
    syncing_box(tree)
    with AdvancingReshape(tree) as moving:
        yield moving


def clock_steps(server: Server, run_id: int) -> list[dict[str, Any]]:
    events = server.get(f"/api/runs/{run_id}")["events"]
    return [e for e in events if e["kind"] == "clock_step"]


def samples(server: Server) -> list[dict[str, Any]]:
    return list(server.get("/api/arrays/md2/samples?points=5000")["samples"])


def stored(db: Path) -> int:
    """Samples of md2 in the server's database (read-only: a cheap condition to poll)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM samples WHERE array = 'md2'").fetchone()[0])
    finally:
        conn.close()


def time_left(
    server: Server, db: Path, reshape: AdvancingReshape, ticks: int = 15
) -> tuple[float, float]:
    """(the server's time left, the true one) after `ticks` more samples on the present clock."""
    seen = stored(db)
    wait_for(lambda: stored(db) >= seen + ticks, WAIT_S, f"{ticks} more samples")
    body = wait_for(lambda: server.get("/api/arrays/md2/forecast"), WAIT_S, "the forecast")
    truth = reshape.true_left_s()
    assert body["forecast"]["status"] == "ok", body["forecast"]
    return float(body["eta_in_s"]), truth


def test_steps_of_the_wall_clock_under_libfaketime(
    faketime_lib: str, reshape: AdvancingReshape, tree: KernelTree, tmp_path: Path
):
    offset = tmp_path / "faketime.rc"
    offset.write_text("+0\n")
    env = {
        "LD_PRELOAD": faketime_lib,
        "FAKETIME_TIMESTAMP_FILE": str(offset),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "MDBOOST_BOOST_HOURS": "1",
        "MDBOOST_API_TOKEN": "test-token-for-clock-steps-0123456789abcdef0123456789",
        "MDBOOST_MAX_CACHE_MB": "1024",
        "MDBOOST_NOTIFY": "http://127.0.0.1:9/hook",  # nobody listens: the outbox keeps them
    }
    server = tree_server(tree, tmp_path, **env)
    db = tmp_path / "data" / "mdboost.db"
    server.env.pop("FAKETIME", None)  # it would win over the file
    with server:
        status, body = server.request("POST", "/api/presets/boost/apply", {})
        assert status == 200, body
        wait_for(forecast_ok(server, "md2"), WAIT_S, "a forecast")
        run_id = wait_for(lambda: server.get("/api/runs"), WAIT_S, "the runs")["runs"][0]["id"]
        figures = [("true", *time_left(server, db, reshape, ticks=30))]
        for count, (label, setting, _) in enumerate(STEPS, start=1):
            offset.write_text(setting + "\n")
            wait_for(lambda n=count: len(clock_steps(server, run_id)) == n, WAIT_S, f"step {count}")
            figures.append((label, *time_left(server, db, reshape)))
        # Read with patience: on a loaded box one answer can take longer than a request's 5 s.
        chart = wait_for(lambda: samples(server), WAIT_S, "the chart")
        tuning = wait_for(lambda: server.get("/api/tuning"), WAIT_S, "the tuning status")
        steps = wait_for(lambda: clock_steps(server, run_id), WAIT_S, "the run's events")
    print("\n| clock | time left (server) | true time left | error |")
    for label, left, truth in figures:
        print(f"| {label} | {left / 3600:.2f} h | {truth / 3600:.2f} h | {left / truth - 1:+.2%} |")

    for label, left, truth in figures:
        assert abs(left / truth - 1) <= TOLERANCE, (label, figures)
    assert [round(e["detail"]["moved_s"] / 3600) for e in steps] == [h for _, _, h in STEPS]
    assert tuning["session"] is not None and tuning["session"]["preset"] == "boost", tuning
    conn = sqlite3.connect(db)
    try:
        stalls = conn.execute(
            "SELECT COUNT(*) FROM notify_outbox WHERE kind = 'stalled'"
        ).fetchone()
        queued = conn.execute("SELECT COUNT(*) FROM notify_outbox").fetchone()
        timeline = conn.execute(
            "SELECT ts, mono FROM samples WHERE array = 'md2' ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    assert queued[0] > 0  # the reshape's start was queued: the outbox is in use
    assert stalls[0] == 0
    # The chart: one line on the wall clock of now, each gap between samples the monotonic time
    # between them (no hour twice, no day-long hole), ending now.
    times = [s["ts"] for s in chart]
    assert times == [ts for ts, _ in timeline][: len(times)]
    gaps = [(b[0] - a[0]) - (b[1] - a[1]) for a, b in itertools.pairwise(timeline)]
    assert max(abs(g) for g in gaps) < 1.0, max(gaps, key=abs)  # a loaded box reads late
    assert max(b - a for a, b in itertools.pairwise(times)) < 60
    assert abs(times[-1] - time.time()) < 30  # back to true: the line ends now
