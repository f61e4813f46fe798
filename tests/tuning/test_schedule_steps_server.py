"""A schedule's window over the real server while NTP steps the wall clock back (libfaketime, as
in tests/test_clock_steps_server.py): a 3-minute backward step just inside a window had ended
the open boost ("the window ended", untrue) and then announced a boost it never applied."""

import time
from datetime import UTC, datetime
from pathlib import Path

from tests.kernel_tree import KernelTree
from tests.server import tree_server, wait_for
from tests.test_clock_steps_server import WAIT_S, faketime_lib, stored  # noqa: F401  (a fixture)

BOOSTED = {
    "sys/block/md2/md/stripe_cache_size": "16384\n",
    "sys/block/md2/md/sync_speed_min": "600000\n",
    "sys/block/md2/md/sync_speed_max": "2000000\n",
    "sys/block/md2/queue/read_ahead_kb": "32768\n",
}


def ticks_after(database: Path, count: int) -> None:
    """Wait for `count` more samples of md2 in the server's database (read-only)."""
    seen = stored(database)
    wait_for(lambda: stored(database) >= seen + count, WAIT_S, f"{count} more samples")


def hhmm(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M")


def test_a_backward_step_inside_a_window_neither_ends_nor_repeats_it(
    faketime_lib: str,  # noqa: F811
    box: KernelTree,
    tmp_path: Path,
):
    offset = tmp_path / "faketime.rc"
    offset.write_text("+0\n")
    server = tree_server(
        box,
        tmp_path,
        LD_PRELOAD=faketime_lib,
        FAKETIME_TIMESTAMP_FILE=str(offset),
        FAKETIME_NO_CACHE="1",
        FAKETIME_DONT_FAKE_MONOTONIC="1",
        MDBOOST_API_TOKEN="test-token-for-schedule-steps-0123456789abcdef",
        MDBOOST_MAX_CACHE_MB="1024",
        TZ="UTC",  # the box's zone, which a schedule added without one follows
    )
    server.env.pop("FAKETIME", None)  # it would win over the file
    log = tmp_path / "server.log"
    database = tmp_path / "data" / "mdboost.db"
    # A window that began one to two minutes ago: a step back 3 minutes leaves it.
    now = time.time()
    with server:
        body = {"preset": "boost", "start": hhmm(now - 60), "end": hhmm(now + 3600)}
        status, answer = server.request("POST", "/api/schedules", body)
        assert status == 201, answer
        wait_for(lambda: "applied boost" in log.read_text(), WAIT_S, "the window's boost")
        assert {k: box.read(k) for k in BOOSTED} == BOOSTED
        offset.write_text("-3m\n")
        wait_for(lambda: "wall clock moved -" in log.read_text(), WAIT_S, "the step")
        ticks_after(database, 10)
        assert server.get("/api/tuning")["active"] is True
        offset.write_text("+0\n")
        wait_for(lambda: log.read_text().count("wall clock moved") == 2, WAIT_S, "the step back")
        ticks_after(database, 10)
        assert server.get("/api/tuning")["active"] is True
    text = log.read_text()
    assert "the window ended" not in text.split("Shutting down")[0]
    assert (
        text.count("applied boost to md2") == 1
    )  # once, at the window's start: never announced again
