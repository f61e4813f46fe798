"""Steps of the wall clock with injected clocks: a reshape's forecast, the stall timer,
the boost timer, the chart and the run's events across NTP stepping the clock back 1 h, forward
1 day and back to the truth, while the monotonic clock runs on. tests/test_clock_steps_server.py
does the same to the real server under libfaketime."""

import itertools
import json
from pathlib import Path

import pytest

from app.clock import STEP_S, Timeline
from app.live import forecasts
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.live.tick import Tick
from app.notify import destinations, senders
from app.notify.delivery import Deliverer, DeliveryRules
from app.notify.notifier import Notifier
from app.store import history, journal
from app.web import views
from tests.kernel_tree import RESHAPE_TOTAL, KernelTree, mdstat_text, progress, raid1, raid5
from tests.tuning.tuners import make_tuner

SPEED_KB_S = 6000  # the reshape's true pace
TICK_S = 5.0
HOUR = 3600.0
DAY = 86400.0


class Clocks:
    """A wall clock the test steps and a monotonic clock that only runs forward."""

    def __init__(self) -> None:
        self.wall = 1_780_000_000.0
        self.mono = 1000.0

    def run(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def test_the_timeline_reports_a_step_once_and_runs_on_monotonic_time_between_ticks():
    clocks = Clocks()
    timeline = Timeline(lambda: clocks.wall, lambda: clocks.mono)
    clocks.run(TICK_S)
    assert timeline.read().step == 0.0
    clocks.wall += STEP_S  # NTP slewing, or a late tick: no step
    clocks.run(TICK_S)
    assert timeline.read().step == 0.0
    clocks.wall += DAY
    assert timeline() == pytest.approx(clocks.wall - DAY)  # requests: no jump before the tick
    reading = timeline.read()
    assert (reading.wall, reading.mono, reading.step) == (clocks.wall, clocks.mono, DAY)
    assert timeline() == clocks.wall
    clocks.run(TICK_S)
    assert timeline.read().step == 0.0  # reported once
    clocks.wall -= HOUR
    assert timeline.read().step == -HOUR


class Nas:
    """The sampler, the present, the tuner (boost timer, schedules) and the notifier (stall) in
    one process over a kernel tree whose reshape advances at SPEED_KB_S of monotonic time."""

    def __init__(self, tree: KernelTree, tmp_path: Path, **settings: object) -> None:
        self.tree = tree
        self.clocks = Clocks()
        self.timeline = Timeline(lambda: self.clocks.wall, lambda: self.clocks.mono)
        self.tuner = make_tuner(tree, tmp_path, self.timeline, **settings)  # type: ignore[arg-type]
        self.conn = self.tuner.conn
        self.sampler = Sampler(self.tuner.host, self.conn, self.timeline)
        self.snapshot_builder = SnapshotBuilder(self.tuner.host, self.conn)
        self.notifier = Notifier(
            self.conn, self.tuner.host, self.timeline, self.tuner.settings, self.timeline
        )
        self.done = RESHAPE_TOTAL // 10
        self.speed = SPEED_KB_S
        self.notices: list[str] = []
        self.reshape()

    def reshape(self) -> None:
        text = progress("reshape", self.done, RESHAPE_TOTAL, SPEED_KB_S)
        self.tree.mdstat(mdstat_text(raid5(progress=text), raid1()))

    def tick(self, seconds: float = TICK_S, progressing: bool = True) -> Tick:
        self.clocks.run(seconds)
        self.done += int(self.speed * seconds) if progressing else 0
        self.reshape()
        tick = self.sampler.sample_once()
        assert tick.error is None, tick.error
        self.snapshot_builder.update(tick)
        self.tuner.on_tick(tick)
        self.notices += [m.key for m in self.notifier.on_tick(tick)]
        return tick

    def time_left(self) -> float:
        view = forecasts.array_eta(self.snapshot_builder.snapshot, "md2", self.timeline())
        assert view.forecast.status == "ok", view.forecast
        assert view.eta_in_s is not None
        return view.eta_in_s


@pytest.fixture
def nas(box: KernelTree, tmp_path: Path) -> Nas:
    return Nas(box, tmp_path, boost_hours=2.0, notify_stall_minutes=10)


def test_steps_of_the_wall_clock_leave_the_forecast_the_boost_and_the_chart_alone(nas: Nas):
    for _ in range(36):  # 3 min before the press: the never-slower rule knows the pace before
        nas.tick()
    nas.tuner.apply("boost")
    for _ in range(60):  # 5 min of a steady reshape: the forecast has measured it
        nas.tick()
    truth = (RESHAPE_TOTAL - nas.done) / SPEED_KB_S
    figures = [("true", nas.time_left(), truth)]
    for label, step in (("back 1 h", -HOUR), ("forward 1 day", DAY), ("back to true", HOUR - DAY)):
        nas.clocks.wall += step
        assert nas.tick().clock_step == pytest.approx(step)
        for _ in range(11):  # a minute on the new wall time
            nas.tick()
        figures.append((label, nas.time_left(), (RESHAPE_TOTAL - nas.done) / SPEED_KB_S))
    for label, left, true_left in figures:
        assert left == pytest.approx(true_left, rel=0.03), (label, figures)

    assert not [key for key in nas.notices if ":stalled:" in key], nas.notices
    session = journal.open_session(nas.conn)
    assert session is not None and session.preset == "boost"  # 21 min of 2 h: still on
    run = history.open_run(nas.conn, "md2")
    assert run is not None
    steps = nas.conn.execute(
        "SELECT ts, detail FROM events WHERE kind = 'clock_step' AND run_id = ? ORDER BY id",
        (run.id,),
    ).fetchall()
    assert [json.loads(e["detail"])["moved_s"] for e in steps] == [-HOUR, DAY, HOUR - DAY]
    page = views.past_run(nas.tuner, nas.conn, run.id)
    assert page is not None
    assert [m.label for m in page.chart.markers if m.kind == "clock_step"] == [
        "the clock moved -1 h",
        "the clock moved +24 h",
        "the clock moved -23 h",
    ]
    # The chart: one continuous line, each sample a tick after the one before, monotonic times
    # and wall times apart by the same seconds.
    rows = nas.conn.execute(
        "SELECT ts, mono FROM samples WHERE run_id = ? ORDER BY id", (run.id,)
    ).fetchall()
    assert len(rows) == 36 + 60 + 3 * 12
    gaps = {round(b["ts"] - a["ts"], 6) for a, b in itertools.pairwise(rows)}
    assert gaps == {TICK_S}
    assert rows[-1]["ts"] == nas.clocks.wall
    assert [s.ts for s in history.samples(nas.conn, "md2", points=5000)] == [r["ts"] for r in rows]


def test_the_boost_timer_counts_monotonic_time_across_a_day_forward(nas: Nas):
    nas.tuner.apply("boost")
    nas.tick()
    nas.clocks.wall += DAY
    nas.tick()
    assert journal.open_session(nas.conn) is not None  # a day on the wall clock, 10 s of boost
    for _ in range(2):
        nas.tick(HOUR)
    session = nas.conn.execute("SELECT end_reason FROM tuning_sessions").fetchone()
    assert session["end_reason"] == "MDBOOST_BOOST_HOURS=2 elapsed"  # two hours, not a day


def test_a_stall_is_still_told_when_the_clock_steps(nas: Nas):
    """The stall timer measures monotonic time: a step neither fires it nor hides a real one."""
    for _ in range(24):
        nas.tick()
    for _ in range(60):  # 5 min without progress: half of MDBOOST_NOTIFY_STALL_MINUTES
        nas.tick(progressing=False)
    nas.clocks.wall += DAY
    for _ in range(59):
        nas.tick(progressing=False)
    assert not [key for key in nas.notices if ":stalled:" in key]
    nas.tick(progressing=False)  # ten minutes of no progress
    assert [key for key in nas.notices if ":stalled:" in key]


def test_an_idle_array_stores_no_row_for_its_monotonic_time_nor_for_a_step(nas: Nas):
    """md0 says nothing new: one row, though each tick's monotonic time differs and the wall
    clock steps a day (an idle array stores only what is new, and a heartbeat)."""
    for _ in range(10):
        nas.tick()
    nas.clocks.wall += DAY
    for _ in range(10):
        nas.tick()
    rows = nas.conn.execute("SELECT ts FROM samples WHERE array = 'md0'").fetchall()
    assert len(rows) == 1


def test_a_boosts_measured_effect_spans_monotonic_time_across_a_step(box: KernelTree, tmp_path):
    """The before/after windows (MDBOOST_EFFECT_MINUTES) around an apply, with NTP stepping the
    clock a day forward in the after-window: the effect is the doubled pace, measured in full."""
    nas = Nas(box, tmp_path, effect_minutes=1.0)
    for _ in range(24):
        nas.tick()
    nas.tuner.apply("boost")
    nas.speed = 2 * SPEED_KB_S
    for _ in range(9):  # the settle time, and into the after-window
        nas.tick()
    nas.clocks.wall += DAY
    for _ in range(6):
        nas.tick()
    (effect,) = nas.conn.execute("SELECT * FROM tuning_effects").fetchall()
    assert effect["measured_at"] is None  # a minute after the settle time has not passed
    for _ in range(9):
        nas.tick()
    (effect,) = nas.conn.execute("SELECT * FROM tuning_effects").fetchall()
    assert effect["measured_at"] is not None
    assert (effect["before_kb_s"], effect["after_kb_s"]) == (SPEED_KB_S, 2 * SPEED_KB_S)
    assert effect["ratio"] == 2.0


def test_a_notifications_backoff_counts_monotonic_seconds_across_a_step(nas: Nas):
    """A message whose send failed waits its retry delay in monotonic seconds: a day forward on
    the wall clock neither sends it at once nor makes it wait a day after a step back."""
    destinations.add(nas.conn, "http://127.0.0.1:9/hook", nas.timeline(), allow_local=True)
    sent: list[str] = []

    def refuse(url: str, message: senders.Message, timeout: float) -> None:
        sent.append(message.key)
        raise senders.SendFailed("connection refused")

    deliverer = Deliverer(nas.conn, DeliveryRules(first_retry_s=60.0), nas.timeline, refuse)
    nas.tick()  # the reshape's start is queued
    assert deliverer.pass_once() == 0 and len(sent) == 1  # refused: retry in 60 s
    nas.tick()
    nas.clocks.wall += DAY
    assert deliverer.pass_once() == 0 and len(sent) == 1  # before the sampler saw the step
    nas.tick()
    assert deliverer.pass_once() == 0 and len(sent) == 1  # 10 s of 60: not yet
    for _ in range(10):
        nas.tick()
    assert deliverer.pass_once() == 0 and len(sent) == 2  # 60 s: tried again, refused again
    nas.clocks.wall -= DAY
    for _ in range(23):  # the second delay (120 s) less 5 s, on the clock stepped back
        nas.tick()
    assert deliverer.pass_once() == 0 and len(sent) == 2
    nas.tick()
    assert deliverer.pass_once() == 0 and len(sent) == 3
