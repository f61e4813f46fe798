"""Schedules with an injected clock: windows across midnight and DST, manual actions, restarts."""

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient

from app.clock import Timeline
from app.config import Settings
from app.live.sampler import Sampler
from app.live.tick import Tick
from app.main import create_app
from app.store import journal
from app.tuning.schedule import scheduler
from app.tuning.schedule.daily import ScheduleError
from tests.kernel_tree import KernelTree, act_like_md, idle_box, mdstat_text, raid1
from tests.tuning.tuners import Clock, make_tuner

BERLIN = ZoneInfo("Europe/Berlin")
STRIPE_CACHE = "sys/block/md2/md/stripe_cache_size"
SYNC_MIN = "sys/block/md2/md/sync_speed_min"


def at(text: str, zone: ZoneInfo = BERLIN) -> float:
    """Unix seconds of a wall-clock time in `zone`: at('2026-03-29 01:00')."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=zone).timestamp()


class Box:
    """A tuner over a kernel tree, a clock the test moves, and sampler ticks."""

    def __init__(self, tree: KernelTree, tmp_path: Path, start: str) -> None:
        self.tree = tree
        self.tmp_path = tmp_path
        self.clock = Clock()
        self.clock.now = at(start)
        self.original = tree.snapshot()
        self.restart()

    def restart(self) -> None:
        """A new process over the same database: nothing carried over in memory."""
        self.tuner = make_tuner(self.tree, self.tmp_path, self.clock, tz="Europe/Berlin")
        self.sampler = Sampler(self.tuner.host, self.tuner.conn, self.clock)

    def tick(self, when: str | None = None) -> Tick:
        if when is not None:
            self.clock.now = at(when)
        tick = self.sampler.sample_once()
        self.tuner.on_tick(tick)
        return tick

    def boosted(self) -> bool:
        return self.tree.read(STRIPE_CACHE) == "16384\n"

    def at_originals(self) -> bool:
        act_like_md(self.tree, self.original)
        return self.tree.read(STRIPE_CACHE) == "513\n" and self.tree.snapshot() == self.original


def test_overlapping_windows_are_refused_back_to_back_ones_are_not(conn):
    scheduler.add(conn, "boost", "01:00", "07:00", 0.0)
    scheduler.add(conn, "quiet", "07:00", "01:00", 0.0)  # the rest of the day, across midnight
    with pytest.raises(scheduler.ScheduleOverlap):
        scheduler.add(conn, "balanced", "06:59", "07:01", 0.0)
    with pytest.raises(ScheduleError):
        scheduler.add(conn, "boost", "03:00", "03:00", 0.0)
    assert [scheduler.label(s) for s in scheduler.in_use(conn)] == [
        "boost 01:00–07:00",
        "quiet 07:00–01:00",
    ]


def test_windows_in_other_zones_are_compared_on_one_clock_and_unknown_zones_refused(conn):
    """01:00-07:00 in Berlin is 16:00-22:00 the day before in Los Angeles (in winter)."""
    berlin = ZoneInfo("Europe/Berlin")
    winter = datetime(2026, 1, 15, 12, tzinfo=UTC).timestamp()
    scheduler.add(conn, "boost", "01:00", "07:00", winter, None, berlin)
    with pytest.raises(scheduler.ScheduleOverlap):
        scheduler.add(conn, "quiet", "21:30", "23:00", winter, "America/Los_Angeles", berlin)
    added = scheduler.add(conn, "quiet", "22:00", "23:00", winter, "America/Los_Angeles", berlin)
    assert added.zone == "America/Los_Angeles"
    for bad in ("Mars/Olympus", "../etc/passwd", "/etc/localtime"):
        with pytest.raises(ScheduleError, match="not a time zone"):
            scheduler.add(conn, "boost", "08:00", "09:00", winter, bad, berlin)


# ---- the scheduler, with an injected clock


def test_boost_from_01_to_07_applies_at_one_and_puts_the_originals_back_at_seven(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-10 23:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    for when in ("2026-06-10 23:00", "2026-06-11 00:00", "2026-06-11 00:59"):
        nas.tick(when)
        assert not nas.boosted(), when
    nas.tick("2026-06-11 01:00")
    assert nas.boosted()
    assert journal.open_session(nas.tuner.conn).preset == "boost"
    nas.tick("2026-06-11 06:59")
    assert nas.boosted()
    nas.tick("2026-06-11 07:00")
    assert nas.at_originals()
    assert journal.open_session(nas.tuner.conn) is None
    ended = nas.tuner.conn.execute("SELECT end_reason FROM tuning_sessions").fetchone()[0]
    assert ended == "schedule boost 01:00–07:00: the window ended"
    nas.tick("2026-06-12 01:00")  # the next night again
    assert nas.boosted()


@pytest.mark.parametrize(
    ("night", "seven_local_utc"),
    [
        ("2026-03-29", "05:00"),  # clocks go forward at 02:00: 07:00 CEST, 5 h after 01:00 CET
        ("2026-10-25", "06:00"),  # clocks go back at 03:00: 07:00 CET, 7 h after 01:00 CEST
    ],
)
def test_on_a_dst_night_the_originals_are_back_at_seven_local_time(
    box, tmp_path, night, seven_local_utc
):
    nas = Box(box, tmp_path, f"{night} 00:30")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick(f"{night} 01:00")
    assert nas.boosted()
    seven = at(f"{night} {seven_local_utc}", ZoneInfo("UTC"))
    nas.clock.now = seven - 60
    nas.tick()
    assert nas.boosted()
    nas.clock.now = seven
    nas.tick()
    assert nas.at_originals()


def test_a_revert_by_hand_wins_until_the_window_ends(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 01:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick()
    assert nas.boosted()
    nas.clock.now += 3600
    nas.tuner.revert("requested")
    for when in ("2026-06-11 02:01", "2026-06-11 05:00", "2026-06-11 06:59"):
        nas.tick(when)
        assert nas.at_originals(), when
    view = nas.tuner.scheduler.view(nas.tuner.conn, nas.clock()).model_dump()
    assert view["schedules"][0]["overridden"] is True
    nas.tick("2026-06-12 01:00")
    assert nas.boosted()  # the next window is the schedule's again


def test_a_preset_applied_by_hand_wins_until_the_window_ends_then_the_originals_return(
    box, tmp_path
):
    nas = Box(box, tmp_path, "2026-06-11 08:00")
    scheduler.add(nas.tuner.conn, "quiet", "07:00", "01:00", nas.clock())
    nas.tick()
    assert nas.tree.read(SYNC_MIN) == "1000\n"  # quiet: the minimum held low
    nas.tuner.apply("boost")  # the owner wants it done today
    nas.tick("2026-06-11 12:00")
    assert nas.boosted()
    nas.tick("2026-06-12 01:00")
    assert nas.at_originals()


def test_back_to_back_windows_revert_then_apply_the_next(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 06:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    scheduler.add(nas.tuner.conn, "quiet", "07:00", "01:00", nas.clock())
    nas.tick()
    assert nas.boosted()
    view = nas.tuner.scheduler.view(nas.tuner.conn, nas.clock()).model_dump()
    assert view["next"]["what"] == "back to the original values, then quiet"
    assert view["next"]["local"] == "Thu 07:00" and view["next"]["in_s"] == 3600
    nas.tick("2026-06-11 07:00")
    assert nas.tree.read(STRIPE_CACHE) == "513\n"  # boost's stripe cache is back
    assert nas.tree.read(SYNC_MIN) == "1000\n"
    reasons = [r[0] for r in nas.tuner.conn.execute("SELECT preset FROM tuning_sessions")]
    assert reasons == ["boost", "quiet"]  # two sessions: quiet's originals are the true ones


def test_a_restart_in_the_window_does_not_apply_twice_and_one_after_it_reverts(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 01:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick()
    nas.restart()
    assert nas.tuner.reconcile() == "resumed"  # md2 still reshapes
    nas.tick("2026-06-11 03:00")
    assert nas.boosted()
    applies = "SELECT COUNT(*) FROM tuning_ops WHERE kind = 'apply'"
    assert nas.tuner.conn.execute(applies).fetchone()[0] == 1
    nas.restart()  # mdboost was down from 03:00 to 09:00: 07:00 passed meanwhile
    assert nas.tuner.reconcile() == "resumed"
    assert nas.boosted()
    nas.tick("2026-06-11 09:00")
    assert nas.at_originals()


class SteppingBox(Box):
    """A Box whose wall clock NTP steps while the monotonic clock runs on."""

    def __init__(self, tree: KernelTree, tmp_path: Path, start: str) -> None:
        self.wall, self.mono = at(start), 0.0
        self.timeline = Timeline(lambda: self.wall, lambda: self.mono)
        super().__init__(tree, tmp_path, start)

    def restart(self) -> None:
        self.tuner = make_tuner(self.tree, self.tmp_path, self.timeline, tz="Europe/Berlin")
        self.sampler = Sampler(self.tuner.host, self.tuner.conn, self.timeline)

    def run(self, seconds: float, step: float = 0.0) -> Tick:
        self.wall += seconds + step
        self.mono += seconds
        return self.tick()

    def sessions(self) -> list[tuple[str, str | None]]:
        rows = self.tuner.conn.execute("SELECT preset, end_reason FROM tuning_sessions ORDER BY id")
        return [(r["preset"], r["end_reason"]) for r in rows]


def test_steps_of_the_clock_never_apply_or_revert_one_window_twice(box, tmp_path):
    nas = SteppingBox(box, tmp_path, "2026-06-11 00:59")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.run(60)
    assert nas.boosted()
    nas.run(1800)  # 01:31
    assert nas.run(5, step=-3600).clock_step == -3600  # 00:31: before the window it holds
    nas.run(1800)  # 01:01 again
    assert nas.boosted() and nas.sessions() == [("boost", None)]
    nas.run(5, step=86400)  # 01:01 the next day: that night's window goes on as this one
    nas.run(5, step=-86400)  # and back
    assert nas.boosted() and nas.sessions() == [("boost", None)]
    nas.run(at("2026-06-11 07:00") - nas.wall)
    assert nas.at_originals()
    nas.run(5, step=-3600)  # 06:00: back into the window it closed
    nas.restart()
    nas.run(60)
    assert nas.at_originals()
    ended = "schedule boost 01:00–07:00: the window ended"
    assert nas.sessions() == [("boost", ended)]
    nas.run(5, step=86400 + 3600)  # 07:02 the next day: that night's window was jumped past,
    assert nas.sessions() == [("boost", ended)]  # as a DST change skips: nothing to do
    nas.run(at("2026-06-13 01:00") - nas.wall)
    assert nas.boosted()  # the next night is the schedule's again


def test_a_revert_by_hand_still_wins_after_a_restart(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 01:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick()
    nas.tuner.revert("requested")
    nas.restart()
    nas.tuner.reconcile()
    nas.tick("2026-06-11 04:00")
    assert nas.at_originals()


def test_the_window_waits_for_a_sync_to_run(tree, tmp_path):
    idle_box(tree)
    nas = Box(tree, tmp_path, "2026-06-11 01:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick()
    assert journal.open_session(nas.tuner.conn) is None
    view = nas.tuner.scheduler.view(nas.tuner.conn, nas.clock()).model_dump()
    assert view["schedules"][0] | {"open": True, "applied": False} == view["schedules"][0]
    from tests.kernel_tree import progress, raid5

    tree.mdstat(mdstat_text(raid5(progress=progress("reshape", 1000, 1953494784)), raid1()))
    tree.md("md2", sync_action="reshape", stripe_cache_size="513", group_thread_cnt="0")
    nas.tick("2026-06-11 03:00")
    assert nas.tree.read(STRIPE_CACHE) == "16384\n"


def test_removing_a_schedule_in_its_window_puts_the_originals_back(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 01:00")
    added = scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    nas.tick()
    assert nas.boosted()
    assert scheduler.remove(nas.tuner.conn, added.id, nas.clock())
    nas.tick("2026-06-11 01:05")
    assert nas.at_originals()
    assert nas.tuner.scheduler.view(nas.tuner.conn, nas.clock()).model_dump() == {
        "zone": "Europe/Berlin",
        "schedules": [],
        "next": None,
    }


def test_a_preset_that_fails_is_not_retried_every_tick_and_the_page_says_why(box, tmp_path):
    nas = Box(box, tmp_path, "2026-06-11 01:00")
    scheduler.add(nas.tuner.conn, "boost", "01:00", "07:00", nas.clock())
    refusing = box.sys / "block/md2/queue/read_ahead_kb"
    refusing.unlink()
    # A real kernel attribute without a store method: the kernel answers EACCES, even to root.
    refusing.symlink_to("/sys/devices/system/cpu/kernel_max")
    nas.tick()
    nas.tick("2026-06-11 01:01")
    ops = nas.tuner.conn.execute("SELECT state FROM tuning_ops").fetchall()
    assert [o[0] for o in ops] == ["rolled_back"]
    error = nas.tuner.scheduler.view(nas.tuner.conn, nas.clock()).schedules[0].error
    assert "the kernel refused read_ahead_kb" in error


# ---- the API and the page


@pytest.fixture
def client(box: KernelTree, tmp_path: Path):
    settings = Settings(
        proc_root=box.proc,
        sys_root=box.sys,
        db=tmp_path / "db.sqlite",
        sample_seconds=0.2,
        demo=True,
        demo_open=True,
        max_cache_mb=1024,
        tz="Europe/Berlin",
    )
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_the_api_adds_lists_and_removes_schedules_and_refuses_bad_ones(client):
    added = client.post(
        "/api/schedules", json={"preset": "boost", "start": "01:00", "end": "07:00"}
    )
    assert added.status_code == 201, added.text
    listed = client.get("/api/schedules").json()
    assert listed["zone"] == "Europe/Berlin"
    assert [(s["start"], s["end"], s["preset"]) for s in listed["schedules"]] == [
        ("01:00", "07:00", "boost")
    ]
    assert listed["next"]["what"] in ("boost", "back to the original values")
    overlap = {"preset": "quiet", "start": "06:00", "end": "08:00"}
    assert client.post("/api/schedules", json=overlap).status_code == 409
    for bad in (
        {"preset": "stock", "start": "01:00", "end": "02:00"},  # puts originals back: not a window
        {"preset": "nope", "start": "01:00", "end": "02:00"},
        {"preset": "boost", "start": "25:00", "end": "02:00"},
        {"preset": "boost", "start": "1am", "end": "02:00"},
        {"preset": "boost", "start": "01:00", "end": "02:00", "days": "mon"},
    ):
        assert client.post("/api/schedules", json=bad).status_code == 422, bad
    schedule_id = listed["schedules"][0]["id"]
    assert client.delete(f"/api/schedules/{schedule_id}").status_code == 200
    assert client.delete(f"/api/schedules/{schedule_id}").status_code == 404
    assert client.get("/api/schedules").json()["schedules"] == []


def test_the_page_shows_the_schedule_and_the_next_change(client):
    html = client.get("/").text
    assert 'id="schedule"' in html and "No schedule." in html
    form = {"preset": "quiet", "start": "07:00", "end": "01:00"}
    fragment = client.post("/ui/schedules", data=form, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert "<strong>07:00–01:00</strong> quiet" in fragment.text
    assert "Next change:" in fragment.text and "Europe/Berlin" in fragment.text
    refused = client.post(
        "/ui/schedules", data={**form, "start": "08:00"}, headers={"HX-Request": "true"}
    )
    assert "overlaps quiet 07:00–01:00" in refused.text
    assert "<strong>07:00–01:00</strong> quiet" in client.get("/").text
