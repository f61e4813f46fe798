"""Auto-tune on a temporary kernel tree whose reshape advances at a speed the knobs set, with an
injected clock: the sweep's order and choice, and every way it stops."""

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.clock import Timeline
from app.config import Settings
from app.diagnosis.rules import MemberIo, Observation
from app.diagnosis.verdicts import Diagnosis
from app.live.sampler import Sampler
from app.live.tick import Tick
from app.main import create_app
from app.store import journal
from app.tuning.autotune import sweep
from app.tuning.autotune.scope import AutoTuneRefused
from app.tuning.schedule import scheduler
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    act_like_md,
    diskstats_line,
    idle_box,
    mdstat_text,
    progress,
    raid1,
    raid5,
)
from tests.server import wait_for
from tests.tuning.tuners import Clock, make_tuner, status

STRIPE_CACHE = "sys/block/md2/md/stripe_cache_size"
READ_AHEAD = "sys/block/md2/queue/read_ahead_kb"
TICK_S = 5.0
MOVING = ("proc/mdstat", "proc/meminfo", "proc/diskstats")
# Real kernel 6.1, HDD-like disks (docs/kernel.md, speed physics): 4096 gave 1.13x over 256, 16384 1.40x; 32768 a bit less.
REAL_KERNEL = {256: 1.0, 513: 1.02, 1024: 1.06, 4096: 1.13, 16384: 1.40, 32768: 1.36}
FAST = dict(
    autotune_settle_seconds=10, autotune_measure_seconds=30, autotune_max_measure_seconds=60
)

Speed = Callable[[int, int, float], float]  # (stripe cache, read-ahead, now) -> KiB/s
OwnIo = Callable[[float], float]  # now -> the box's own I/O on md2, KiB/s


def by_cache(table: dict[int, float], base: float = 20000.0) -> Speed:
    """KiB/s from the stripe cache, interpolated on a log scale; read-ahead does nothing."""
    points = sorted(table.items())

    def speed(cache: int, read_ahead: int, now: float) -> float:
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if x0 <= cache <= x1:
                share = (math.log(cache) - math.log(x0)) / (math.log(x1) - math.log(x0))
                return base * (y0 + share * (y1 - y0))
        return base * (points[0][1] if cache < points[0][0] else points[-1][1])

    return speed


class Nas:
    """md2 reshaping in a tree at the speed its knobs give, sampled every TICK_S seconds."""

    def __init__(
        self,
        tree: KernelTree,
        tmp_path: Path,
        speed: Speed,
        own_io: OwnIo | None = None,
        on_sample: Callable[[Tick], None] | None = None,
        **settings: object,
    ) -> None:
        self.tree = tree
        self.speed = speed
        self.on_sample = on_sample
        self.own_io = own_io
        self.own_sectors = 0.0
        self.clock = Clock()
        # The wall clock runs `wall_step` s from the monotonic one (the test's clock): NTP's step.
        self.wall_step = 0.0
        timeline = Timeline(lambda: self.clock.now + self.wall_step, lambda: self.clock.now)
        self.done = 100_000.0
        self.last_speed = 0.0
        self.total = RESHAPE_TOTAL
        self.running = True
        self.original = tree.snapshot()
        self.tuner = make_tuner(tree, tmp_path, timeline, **{**FAST, **settings})
        self.sampler = Sampler(self.tuner.host, self.tuner.conn, timeline)
        self.write_progress()
        self.tick()

    def knob(self, relative: str) -> int:
        return int(self.tree.read(relative).split()[0])

    def write_progress(self) -> None:
        done, speed = int(self.done), int(self.last_speed)
        line = progress("reshape", done, self.total, speed) if self.running else None
        self.tree.mdstat(mdstat_text(raid5(progress=line), raid1()))

    def tick(self) -> Tick:
        tick = self.sampler.sample_once()
        if self.on_sample is not None:
            self.on_sample(tick)
        self.tuner.on_tick(tick)
        return tick

    def run(self, seconds: float = TICK_S) -> None:
        """Let md reshape for `seconds`, then sample and hand the tick to the tuner."""
        steps = max(1, round(seconds / TICK_S))
        for _ in range(steps):
            speed = self.speed(self.knob(STRIPE_CACHE), self.knob(READ_AHEAD), self.clock.now)
            self.done = min(self.total, self.done + speed * TICK_S)
            self.last_speed = speed
            if self.own_io is not None:
                self.own_sectors += self.own_io(self.clock.now) * 2 * TICK_S
                sectors = int(self.own_sectors)
                self.tree.write("proc/diskstats", diskstats_line("md2", sectors // 8, sectors))
            self.clock.now += TICK_S
            self.write_progress()
            self.tick()

    def sweep(self, limit_s: float = 7200) -> dict:
        """Run until the sweep is over; its view."""
        for _ in range(int(limit_s / TICK_S)):
            if self.tuner.autotuner.running is None:
                break
            self.run()
        view = self.tuner.autotuner.view(self.tuner.conn)
        assert view is not None
        return view

    def knobs(self) -> dict[str, bytes]:
        """Every file but those the test itself moves (progress, RAM, I/O counters)."""
        return {k: v for k, v in self.tree.snapshot().items() if k not in MOVING}

    def at_originals(self) -> bool:
        act_like_md(self.tree, self.original)
        return self.knobs() == {k: v for k, v in self.original.items() if k not in MOVING}


@pytest.fixture
def nas(box: KernelTree, tmp_path: Path) -> Nas:
    return Nas(box, tmp_path, by_cache(REAL_KERNEL))


# ---- the sweep, pure


def test_the_stripe_cache_climbs_and_read_ahead_returns_to_its_reference():
    # Since Linux 4.1 stripe_cache_size is a floor: a lower value written during a busy sync
    # leaves the larger cache in place, so the ladder starts at the value found and only climbs.
    phase = sweep.stripe_cache_phase(513, 65, lambda entries: True)
    assert phase.steps() == [(513, "start"), (4096, "candidate"), (16384, "candidate")]
    assert sweep.stripe_cache_phase(8192, 65, lambda entries: True).candidates == (16384,)
    assert sweep.stripe_cache_phase(16384, 65, lambda entries: True).candidates == ()
    assert sweep.read_ahead_phase(384).steps() == [
        (384, "reference"), (4096, "candidate"), (384, "reference"), (32768, "candidate"),
        (384, "reference"),
    ]  # fmt: skip


def test_candidates_stay_within_the_ram_budget_and_above_md_floor():
    phase = sweep.stripe_cache_phase(256, 1024, lambda entries: entries <= 8192)
    assert (phase.reference, phase.candidates) == (256, (4096,))
    assert sweep.stripe_cache_phase(256, 1024, lambda entries: entries <= 2048).candidates == (
        1024,  # where 4096 does not fit, the one smaller rung
    )
    assert sweep.stripe_cache_phase(256, 2048, lambda entries: entries <= 2048).candidates == ()


def test_the_smallest_setting_within_5_percent_of_the_best_is_kept():
    around_a_reference = [
        sweep.MeasuredStep(384, "reference", 100.0),
        sweep.MeasuredStep(4096, "candidate", 96.0),
        sweep.MeasuredStep(384, "reference", 100.0),
        sweep.MeasuredStep(32768, "candidate", 101.0),
        sweep.MeasuredStep(384, "reference", 100.0),
    ]
    scored = sweep.scores(around_a_reference, climbs=False)
    assert scored == pytest.approx({384: 1 / 1.01, 4096: 0.96 / 1.01, 32768: 1.0})
    assert sweep.choose(scored) == 384
    ladder = [
        sweep.MeasuredStep(513, "start", 50.0),
        sweep.MeasuredStep(4096, "candidate", 96.0),
        sweep.MeasuredStep(16384, "candidate", 100.0),
        sweep.MeasuredStep(32768, "candidate", 98.0),
    ]
    scored = sweep.scores(ladder, climbs=True)
    assert scored == {513: 0.5, 4096: 0.96, 16384: 1.0, 32768: 0.98}
    assert sweep.choose(scored) == 4096


def test_references_that_disagree_around_a_candidate_say_by_how_much():
    def steps(*speeds: float) -> list[sweep.MeasuredStep]:
        roles = ("reference", "candidate", "reference")
        return [
            sweep.MeasuredStep(1, role, speed) for role, speed in zip(roles, speeds, strict=False)
        ]

    assert sweep.reference_moved(steps(100, 50, 109)) is None
    assert sweep.reference_moved(steps(100, 50, 125)) == pytest.approx(25 / 112.5)
    assert sweep.reference_moved(steps(100, 50)) is None


def test_a_step_measures_until_its_speed_is_known_after_the_settle_time():
    window = sweep.Window(written=0.0, settle_s=10, min_s=30, max_s=60)
    for ts in range(0, 41, 5):
        window.add(ts, ts * 100)
    assert window.points[0] == (10, 1000)  # the settle time is not measured
    assert window.complete() and window.speed_kb_s == pytest.approx(100.0)
    # Progress in jumps every 10 s (md at low limits): measured until the line through them
    # knows the speed to 3 %, before the maximum.
    jumps = sweep.Window(written=0.0, settle_s=0, min_s=30, max_s=200)
    for second in range(201):
        jumps.add(second, second * 60 // 600 * 600)
        if jumps.complete():
            break
    assert 30 < second < 60 and jumps.speed_kb_s == pytest.approx(60, rel=0.05)
    # The speed changing under the step: not known until the maximum.
    changing = sweep.Window(written=0.0, settle_s=0, min_s=30, max_s=60)
    done = 0
    for ts in range(0, 61, 5):
        done += 100 if ts < 20 or ts >= 40 else 900
        changing.add(ts, done)
        assert changing.complete() == (ts >= 60), ts


def test_a_window_of_bursts_and_stalls_measures_to_its_maximum():
    # Real kernel, stripe cache 32768, HDD-like disks: ~10 s at 11 MB/s, ~10 s at 1 MB/s. A line
    # through 1 s ticks fits that closely; the quarters' speeds show it is not known yet.
    window = sweep.Window(written=0.0, settle_s=0, min_s=40, max_s=120)
    done = 0
    for second in range(121):
        window.add(second, done)
        done += 11_000 if second // 10 % 2 == 0 else 1_000
        if window.complete():
            break
    assert second >= 60  # not at the minimum: only once the quarters hold several cycles
    assert window.speed_kb_s == pytest.approx(6000, rel=0.05)


def test_steps_are_shortened_to_end_well_before_the_knee_never_under_a_measurement():
    configured = sweep.StepTimes(settle_s=30, min_s=60, max_s=300)
    # A NAS's grow, a day from its knee: 8 steps of at most 330 s fit; nothing changes.
    assert sweep.fit_steps(configured, 8, 86400, tick_s=5) == configured
    assert sweep.fit_steps(configured, 8, None, tick_s=5) == configured
    # 4 GiB HDD-like disks, 300 s from the knee: 8 steps may take 120 s together.
    short = sweep.fit_steps(configured, 8, 300, tick_s=1)
    assert 8 * (short.settle_s + short.max_s) == pytest.approx(0.4 * 300)
    scale = 120 / (8 * 330)
    assert (short.settle_s, short.max_s) == pytest.approx((30 * scale, 300 * scale))
    assert short.min_s == 4  # MIN_POINTS + 1 ticks, above 60 s scaled (2.7 s)
    # Never under a tick to settle, MIN_POINTS + 1 ticks to measure, twice that at most.
    assert sweep.fit_steps(configured, 8, 30, tick_s=5) == sweep.StepTimes(5, 20, 40)
    assert sweep.fit_steps(sweep.StepTimes(0, 10, 15), 8, 30, tick_s=5) == sweep.StepTimes(
        0, 10, 15
    )  # and never longer than configured


def test_the_time_left_runs_to_a_grows_knee_else_to_the_end():
    assert sweep.time_left_s(0, 3000, 10, 2 / 3) == pytest.approx(200)
    assert sweep.time_left_s(2500, 3000, 10, 2 / 3) == pytest.approx(50)  # past it: the end
    assert sweep.time_left_s(0, 3000, 10, None) == pytest.approx(300)
    assert sweep.time_left_s(0, 3000, 0, None) is None  # md shows no speed yet
    assert sweep.time_left_s(None, 3000, 10, None) is None


def test_the_pace_a_sweep_measured_gives_the_time_from_its_start_once_long_enough():
    began = (1000.0, 0)
    assert sweep.paced_left_s(began, (1020.0, 200), 3000, 2 / 3, 20) == pytest.approx(200)
    assert sweep.paced_left_s(began, (1020.0, 200), 3000, None, 20) == pytest.approx(300)
    assert sweep.paced_left_s(began, (1015.0, 150), 3000, 2 / 3, 20) is None  # too short yet
    assert sweep.paced_left_s(began, (1020.0, 0), 3000, 2 / 3, 20) is None  # nothing moved


# ---- on a kernel tree


def test_a_sweep_keeps_the_best_stripe_cache_and_leaves_read_ahead_that_does_nothing(
    nas: Nas,
):
    started = nas.tuner.autotune()
    assert started.state == "running"
    assert nas.knob(STRIPE_CACHE) == 513  # the value found is measured first, as it is
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert view.chosen == {"stripe_cache_size": 16384, "read_ahead_kb": 384}
    assert nas.knob(STRIPE_CACHE) == 16384 and nas.knob(READ_AHEAD) == 384
    cache_steps = [(s.value, s.role) for s in view.steps if s.knob == "stripe_cache_size"]
    assert cache_steps == [(513, "start"), (4096, "candidate"), (16384, "candidate")]
    scores = {s.value: s.score for s in view.steps if s.knob == "stripe_cache_size"}
    assert scores[513] == pytest.approx(1.02 / 1.40, abs=0.03)
    assert scores[4096] == pytest.approx(1.13 / 1.40, abs=0.03)
    assert scores[16384] == 1.0
    assert view.reason == "kept stripe cache 16384, read-ahead 384 KiB"
    # Journaled like any apply: the session is open, and revert restores the originals.
    session = journal.open_session(nas.tuner.conn)
    assert session.preset == "auto-tune"
    kinds = [e[0] for e in nas.tuner.conn.execute("SELECT kind FROM events ORDER BY id")]
    assert set(kinds) == {"autotune"} and len(kinds) >= 5  # one marker per written step
    nas.tuner.revert("requested")
    assert nas.at_originals()


def test_the_state_is_auto_tuning_from_the_first_step_before_anything_is_written(nas: Nas):
    # The first step measures the values found and writes nothing, so no session is open yet;
    # the switch, the headline and the API must still say a sweep runs, not "Not tuned".
    assert status(nas.tuner)["state"]["kind"] == "off"
    nas.tuner.autotune()
    assert journal.open_session(nas.tuner.conn) is None
    state = status(nas.tuner)["state"]
    detail = state.pop("detail")
    assert state == {"kind": "auto-tuning", "preset": None, "label": "Auto-tune is measuring md2"}
    # Its progress too: the first step of those planned, and the time they take.
    steps = status(nas.tuner)["autotune"]["now"]["steps"]
    assert steps >= 2 and detail == f"stripe cache 513 now, step 1 of {steps}"
    assert status(nas.tuner)["autotune"]["now"]["left_s"] > 0
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert status(nas.tuner)["state"]["kind"] == "auto-tuned"


def test_an_array_nobody_reads_keeps_its_read_ahead_without_measuring_it(box, tmp_path):
    # md's sync reads its members directly: the md device's read-ahead serves only the array's
    # users. Where md2's own line in /proc/diskstats shows no reads during the ladder, the
    # read-ahead phase would time noise (10 of 13 steps of a real 5.10 grow).
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL), own_io=lambda now: 0.0)
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert {s.knob for s in view.steps} == {"stripe_cache_size"}
    assert view.chosen == {"stripe_cache_size": 16384, "read_ahead_kb": 384}
    assert nas.knob(READ_AHEAD) == 384
    assert view.reason == (
        "kept stripe cache 16384, read-ahead 384 KiB; read-ahead kept as found, not measured: "
        "nothing read md2 during the sweep (0 KiB/s), and md's reshape does not go through it"
    )


def test_an_array_its_users_read_gets_its_read_ahead_measured(box, tmp_path):
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL), own_io=lambda now: 4000.0)
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.state == "done", view.reason
    read_ahead = [(s.value, s.role) for s in view.steps if s.knob == "read_ahead_kb"]
    assert read_ahead[:2] == [(384, "reference"), (4096, "candidate")]
    assert "not measured" not in view.reason


def test_a_cheaper_cache_within_5_percent_of_the_best_wins(box, tmp_path):
    nas = Nas(box, tmp_path, by_cache({256: 1.0, 1024: 1.5, 4096: 1.9, 16384: 1.95, 32768: 1.9}))
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.chosen["stripe_cache_size"] == 4096
    assert nas.knob(STRIPE_CACHE) == 4096
    assert "md keeps the stripes of stripe cache 16384 until this sync leaves them idle" in (
        view.reason
    )


def test_a_steady_slowdown_keeps_the_cheaper_cache_and_read_ahead_cancels_it(box, tmp_path):
    # No knob matters, but the disks slow down 1 % a minute (inner tracks): the ladder, measured
    # one step after the other, sees each larger cache a little slower and spends no RAM; the
    # read-ahead candidates, each between two references, score as they are: alike.
    nas = Nas(box, tmp_path, lambda cache, ra, now: 30000.0 * (1 - (now - 1.7e9) / 6000))
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.chosen == {"stripe_cache_size": 513, "read_ahead_kb": 384}
    ladder = [s.score for s in view.steps if s.knob == "stripe_cache_size"]
    assert ladder == sorted(ladder, reverse=True) and ladder[-1] > 0.95
    read_ahead = [s.score for s in view.steps if s.knob == "read_ahead_kb"]
    assert all(score == pytest.approx(1.0, abs=0.02) for score in read_ahead), read_ahead


def test_a_speed_change_after_the_ladder_is_said_with_the_choice(box, tmp_path):
    real = by_cache(REAL_KERNEL)
    slower_from = {"ts": math.inf}

    def speed(cache: int, read_ahead: int, now: float) -> float:
        return real(cache, read_ahead, now) * (0.7 if now >= slower_from["ts"] else 1.0)

    nas = Nas(box, tmp_path, speed)
    nas.tuner.autotune()
    while nas.tuner.autotuner.running.phase == 0:
        nas.run()
    slower_from["ts"] = nas.clock.now - TICK_S
    view = nas.sweep()
    assert view.chosen["stripe_cache_size"] == 16384
    assert "; the speed moved 35% since stripe cache 16384 was measured" in view.reason


def test_where_the_speed_limit_binds_nothing_is_raised(box, tmp_path):
    box.write("sys/block/md2/md/sync_speed_max", "20000 (local)")
    nas = Nas(box, tmp_path, lambda cache, ra, now: 20000.0)
    nas.run(30)  # md's speed= shows the limit
    before = nas.knobs()
    with pytest.raises(AutoTuneRefused, match="held by its max limit"):
        nas.tuner.autotune()
    assert nas.knobs() == before


def test_a_limit_reached_mid_sweep_stops_the_larger_candidates(box, tmp_path):
    box.write("sys/block/md2/md/sync_speed_max", "26000 (local)")
    nas = Nas(box, tmp_path, lambda cache, ra, now: min(26000.0, 6.2 * cache))
    nas.tuner.autotune()
    view = nas.sweep()
    notes = {s.value: s.note for s in view.steps if s.knob == "stripe_cache_size"}
    assert "at the speed limit" in notes[4096]  # 25395 KiB/s
    assert 16384 not in notes  # could not be told apart: not tried
    assert view.chosen["stripe_cache_size"] == 4096


def test_low_memory_at_the_start_is_refused(box, tmp_path):
    box.write("proc/meminfo", "MemTotal: 1000000 kB\nMemAvailable: 200000 kB\n")
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL))
    with pytest.raises(AutoTuneRefused, match="MemAvailable is 195 MiB"):
        nas.tuner.autotune()


def test_memavailable_under_the_floor_mid_sweep_aborts_and_restores(nas: Nas):
    nas.tuner.autotune()
    nas.run(120)
    assert nas.tuner.autotuner.running is not None
    nas.tree.write("proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 100000 kB\n")
    nas.run()
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "aborted"
    assert view.reason.startswith("MemAvailable fell to 98 MiB, under the floor of 256 MiB")
    assert journal.open_session(nas.tuner.conn) is None  # the sweep opened it: reverted
    assert nas.at_originals()


def test_a_write_the_kernel_refuses_aborts_and_restores(nas: Nas):
    refusing = nas.tree.sys / "block/md2/queue/read_ahead_kb"
    refusing.unlink()
    # A real kernel attribute without a store method: the kernel answers EACCES, even to root.
    refusing.symlink_to("/sys/devices/system/cpu/kernel_max")
    nas.original = nas.tree.snapshot()
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.state == "aborted"
    assert "the kernel refused read_ahead_kb=" in view.reason
    assert nas.at_originals()


def test_the_first_candidate_refused_aborts_and_changes_nothing(box, tmp_path):
    refusing = box.sys / "block/md2/md/stripe_cache_size"
    refusing.unlink()
    refusing.symlink_to("/sys/devices/system/cpu/kernel_max")  # reads a number, refuses writes
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL))
    before = nas.knobs()
    started = nas.tuner.autotune()
    assert (
        started.steps == [] and started.now is not None and started.now.role == "start"
    )  # nothing written yet
    view = nas.sweep()
    assert view.state == "aborted"
    assert "the kernel refused stripe_cache_size=" in view.reason
    assert nas.knobs() == before
    assert journal.open_session(nas.tuner.conn) is None


def test_the_box_own_io_starving_aborts_and_restores(nas: Nas):
    def diskstats(completed: int, waited_ms: int, in_flight: int) -> None:
        nas.tree.write(
            "proc/diskstats",
            f"   9       2 md2 {completed} 0 {completed * 8} {waited_ms} 0 0 0 0 {in_flight} 0 0\n",
        )

    diskstats(1000, 20_000, 0)  # 20 ms a request so far
    nas.tuner.autotune()
    nas.run(30)
    assert nas.tuner.autotuner.running is not None
    diskstats(1010, 20_000 + 10 * 9000, 4)  # ten more, 9 s each
    nas.run()
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "aborted"
    assert "requests on md2 waited 9.0 s on average" in view.reason
    assert nas.at_originals()


def test_a_revert_by_hand_stops_the_sweep_and_nothing_is_written_after_it(nas: Nas):
    nas.tuner.autotune()
    nas.run(60)
    nas.tuner.revert("requested")
    assert nas.at_originals()
    nas.run(300)
    assert nas.at_originals()
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "cancelled"


def test_boost_applied_by_hand_wins_over_the_sweep(nas: Nas):
    nas.tuner.autotune()
    nas.run(60)
    nas.tuner.apply("boost")
    nas.run(300)
    assert nas.knob(STRIPE_CACHE) == 16384 and nas.knob(READ_AHEAD) == 32768
    assert nas.tuner.autotuner.view(nas.tuner.conn).state == "cancelled"
    nas.tuner.revert("requested")
    assert nas.at_originals()  # boost and sweep shared one session: the originals are the first


def test_an_abort_over_a_boost_puts_back_the_boost(nas: Nas):
    nas.tuner.apply("boost")  # stripe cache 16384, the ladder's top: read-ahead left to try
    nas.tree.write(READ_AHEAD, "384")  # a person's own read-ahead over boost's
    boosted = nas.knobs()
    nas.tuner.autotune()
    nas.run(60)
    assert nas.knob(READ_AHEAD) == 4096
    nas.tree.write("proc/meminfo", "MemTotal: 8000000 kB\nMemAvailable: 100000 kB\n")
    nas.run()
    assert nas.tuner.autotuner.view(nas.tuner.conn).state == "aborted"
    assert nas.knobs() == boosted  # the values found when the sweep began: boost's
    assert journal.open_session(nas.tuner.conn).preset == "auto-tune"
    nas.tuner.revert("requested")
    assert nas.at_originals()


def test_the_sync_ending_mid_sweep_stops_it_and_the_originals_return(box, tmp_path):
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL), revert_on_finish=False)
    nas.tuner.autotune()
    nas.run(60)
    nas.running = False
    nas.tree.md("md2", sync_action="idle", stripe_cache_size=nas.tree.read(STRIPE_CACHE).strip())
    nas.write_progress()
    nas.run()
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "aborted" and "reshape ended before the sweep did" in view.reason
    assert nas.knob(STRIPE_CACHE) == 513


def test_passing_the_grow_knee_measures_the_phase_again(box, tmp_path):
    box.write("sys/block/md2/md/raid_disks", "4 (3)")
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL))
    nas.done = RESHAPE_TOTAL * 2 / 3 - 20000 * 120  # the knee two minutes ahead
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.state == "done", view.reason
    notes = [s.note for s in view.steps]
    assert notes.count("not counted: the grow passed its knee during this step") == 1
    assert view.chosen["stripe_cache_size"] == 16384


def test_a_grow_minutes_from_its_knee_gets_shorter_steps_and_a_sweep_that_ends_before_it(
    box, tmp_path
):
    # On 2 GiB disks unshortened steps end the sweep at 68 % of the grow, past the knee, so
    # what it chooses runs only for the tail. Steps of 10 s + 60-120 s (eight: 560 s at least) would pass
    # a knee 450 s away; shortened, the whole sweep ends before it.
    box.write("sys/block/md2/md/raid_disks", "4 (3)")
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL), autotune_measure_seconds=60,
              autotune_max_measure_seconds=120)  # fmt: skip
    speed = 20000 * REAL_KERNEL[513]
    nas.done = RESHAPE_TOTAL * 2 / 3 - speed * 480
    nas.run(30)  # md's speed= shows the pace
    nas.tuner.autotune()
    assert nas.tuner.autotuner.running.times == sweep.StepTimes(5, 20, 40)  # the floors, 5 s ticks
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert nas.done < RESHAPE_TOTAL * 2 / 3  # over before the knee
    assert all(s.note is None or "knee" not in s.note for s in view.steps)
    assert view.chosen["stripe_cache_size"] == 16384
    assert (
        "steps shortened to 5 s settle and 20-40 s measure: the reshape was about 450 s from its"
        " knee" in view.reason
    )
    assert "steps fitted" not in view.reason  # the pace measured agreed with md's speed=


def unread_grow(box: KernelTree, tmp_path: Path, knee_s: float) -> Nas:
    """A 3 -> 4 grow `knee_s` seconds from its knee at 513's pace, its md device unread (the
    read-ahead phase will be skipped), steps of 10 s + 60-120 s configured."""
    box.write("sys/block/md2/md/raid_disks", "4 (3)")
    nas = Nas(box, tmp_path, by_cache(REAL_KERNEL), own_io=lambda now: 0.0,
              autotune_measure_seconds=60, autotune_max_measure_seconds=120)  # fmt: skip
    nas.done = RESHAPE_TOTAL * 2 / 3 - 20000 * REAL_KERNEL[513] * (knee_s + 60)
    nas.run(60)  # a diagnosis window over md2's own diskstats line
    return nas


def test_a_grow_nobody_reads_fits_its_steps_to_the_ladder_alone(box, tmp_path):
    # The same grow 450 s from its knee, its md device unread: the read-ahead phase will be
    # skipped, so the ladder's three steps get the time, not eight (longer steps, less noise).
    nas = unread_grow(box, tmp_path, 450)
    nas.tuner.autotune()
    times = nas.tuner.autotuner.running.times
    scale = 0.4 * 450 / (3 * (10 + 120))
    assert times.min_s == pytest.approx(60 * scale, rel=0.01) and times.min_s > 20
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert nas.done < RESHAPE_TOTAL * 2 / 3
    assert {s.knob for s in view.steps} == {"stripe_cache_size"}


def test_an_early_speed_reading_far_too_low_is_corrected_by_the_pace_the_sweep_measures(
    box, tmp_path
):
    # On 5.10 md's speed= three seconds into a grow says 506 s to a knee ~90 s away, so
    # steps fitted to it alone are not shortened and the sweep ends at 62 % of the grow. Here speed= shows
    # a sixth of the pace (1800 s to a knee 300 s away): the configured steps (3 x (10 + 60-120
    # s), ~200 s at this steady pace) would pass 40 % of the time to the knee; fitted again on
    # the pace the first step measures, the sweep ends well inside it.
    nas = unread_grow(box, tmp_path, 300)
    nas.last_speed = 20000 * REAL_KERNEL[513] / 6  # md's early, unsettled reading
    nas.write_progress()
    nas.tick()
    nas.tuner.autotune()
    assert nas.tuner.autotuner.running.times == sweep.StepTimes(10, 60, 120)  # 1800 s: enough
    began = nas.clock.now
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert nas.clock.now - began <= sweep.SWEEP_SHARE * 300
    assert view.chosen["stripe_cache_size"] == 16384
    assert (
        "steps fitted to 5 s settle and 20-40 s measure: at the pace measured over the sweep's "
        "first 20 s, the reshape was about 300 s from its knee when the sweep began (md's speed="
        " had said 1800 s)" in view.reason
    ), view.reason


def test_a_step_of_the_wall_clock_mid_sweep_leaves_the_pace_it_measures_alone(box, tmp_path):
    # The steps' fit across a wall-clock step: NTP steps the clock a day ahead 10 s into the sweep. The pace
    # the sweep measures runs from where it began, on monotonic time: the steps are fitted as
    # they would have been, and the sweep still ends well inside the time to the knee.
    nas = unread_grow(box, tmp_path, 300)
    nas.last_speed = 20000 * REAL_KERNEL[513] / 6
    nas.write_progress()
    nas.tick()
    nas.tuner.autotune()
    began = nas.clock.now
    nas.run(10)
    nas.wall_step = 86400.0
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert nas.clock.now - began <= sweep.SWEEP_SHARE * 300
    assert "at the pace measured over the sweep's first 20 s" in view.reason, view.reason


def test_a_pace_slower_than_mds_reading_never_lengthens_the_steps(box, tmp_path):
    # The pace a sweep measures includes the slow value found: on real 6.1 and 6.12 grows it
    # said 166-182 s to the knee where md's speed= said 97-103 s, and steps lengthened on it ran
    # the sweep to 34-38 % of the grow. Here md's speed= shows twice the pace (300 s to a knee
    # 600 s away): the steps stay as md's reading fitted them (the floors), not 6 + 37-74 s.
    nas = unread_grow(box, tmp_path, 600)
    nas.last_speed = 20000 * REAL_KERNEL[513] * 2
    nas.write_progress()
    nas.tick()
    nas.tuner.autotune()
    fitted = nas.tuner.autotuner.running.times
    assert fitted == sweep.StepTimes(5, 20, 40)
    nas.run(60)  # the sweep has measured its own, slower pace
    assert nas.tuner.autotuner.running.times == fitted
    view = nas.sweep()
    assert view.state == "done", view.reason
    assert "steps fitted" not in view.reason and "steps shortened to" in view.reason


def test_a_restart_mid_sweep_puts_back_the_values_found(nas: Nas, tmp_path):
    nas.tuner.autotune()
    nas.run(200)
    assert nas.tuner.autotuner.running is not None
    assert not nas.at_originals()
    nas.tuner = make_tuner(nas.tree, tmp_path, nas.clock, **FAST)  # kill -9, start again
    assert nas.tuner.reconcile() == "resumed"
    assert nas.at_originals()
    row = nas.tuner.conn.execute("SELECT state, reason FROM autotune_sweeps").fetchone()
    assert tuple(row) == ("interrupted", "mdboost stopped during the sweep")
    assert journal.open_session(nas.tuner.conn) is None


def test_a_view_between_the_last_phase_and_the_sweeps_end_shows_no_step(nas: Nas):
    # Requests read the view without the tick's lock; on the real kernel one came while the
    # sweep's last write ran, after its last phase had ended (an IndexError, a 500).
    nas.tuner.autotune()
    running = nas.tuner.autotuner.running
    running.phase = len(running.phases)
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "running" and view.now is None


def test_the_api_starts_a_sweep_and_refuses_a_second_or_an_idle_box(nas: Nas):
    with pytest.raises(AutoTuneRefused, match="no array named 'md7'"):
        nas.tuner.autotune("md7")
    with pytest.raises(AutoTuneRefused, match="md0 runs no resync, recovery or reshape"):
        nas.tuner.autotune("md0")
    nas.tuner.autotune()
    with pytest.raises(AutoTuneRefused, match="a sweep on md2 is running already"):
        nas.tuner.autotune()
    plan = json.loads(nas.tuner.conn.execute("SELECT plan FROM autotune_sweeps").fetchone()[0])
    assert [p["knob"] for p in plan] == ["stripe_cache_size", "read_ahead_kb"]


def test_a_step_held_at_the_min_limit_by_other_io_is_measured_again(box, tmp_path):
    burst = {"until": 0.0}
    real = by_cache(REAL_KERNEL)

    def speed(cache: int, read_ahead: int, now: float) -> float:
        return 10000.0 if now < burst["until"] else real(cache, read_ahead, now)

    box.write("proc/sys/dev/raid/speed_limit_min", "10000")
    nas = Nas(box, tmp_path, speed)
    nas.tuner.autotune()
    nas.run(60)
    burst["until"] = nas.clock.now + 90  # other I/O: md holds the sync at its min
    view = nas.sweep()
    assert view.state == "done"
    held = [s for s in view.steps if s.note and s.note.startswith("held at the minimum")]
    assert held and all(s.score is None for s in held)
    assert view.chosen["stripe_cache_size"] == 16384


def test_a_speed_at_the_min_limit_for_good_is_the_disks_own_and_counts(box, tmp_path):
    box.write("proc/sys/dev/raid/speed_limit_min", "10000")
    nas = Nas(box, tmp_path, lambda cache, ra, now: 10000.0 if cache == 4096 else 20000.0)
    nas.tuner.autotune()
    view = nas.sweep()
    assert view.state == "done"
    counted = [s for s in view.steps if s.note and s.note.endswith("all along: counted")]
    assert [(s.value, s.score) for s in counted] == [(4096, 0.5)]


def alone_on_its_disks(tick: Tick) -> None:
    """The tick's diagnosis of md2: its four members busy with the sync, nothing else on them."""
    members = tuple(MemberIo(f"sd{c}5", f"sd{c}", 0.97, 5000.0, 5000.0, 120.0, 8.0) for c in "abcd")
    seen = Observation(tick.ts or 0.0, "md2", "raid5", "reshape", 10000, 10000, 200000)
    tick.diagnoses["md2"] = Diagnosis("md2", seen.now, (), {}, replace(seen, members=members))


def test_a_sync_near_the_min_limit_alone_on_its_disks_is_not_held_there(box, tmp_path):
    # Real kernel, HDD-like disks, DSM's min of 10000 KiB/s: the reshape ran at ~9 MB/s with no
    # other I/O at all. Near the min but alone on its disks, a step counts at once.
    box.write("proc/sys/dev/raid/speed_limit_min", "10000")
    speed = by_cache({256: 0.9, 4096: 0.95, 16384: 1.2, 32768: 1.2}, base=10000.0)
    nas = Nas(box, tmp_path, speed, on_sample=alone_on_its_disks)
    nas.tuner.autotune()
    view = nas.sweep(limit_s=1200)
    assert view.state == "done", view.reason
    assert not any((s.note or "").startswith(sweep.HELD) for s in view.steps)
    assert view.chosen["stripe_cache_size"] == 16384


def test_a_read_ahead_candidate_measured_while_the_load_changed_is_measured_again(box, tmp_path):
    real = by_cache(REAL_KERNEL)
    load = {"from": 0.0, "until": 0.0}

    def speed(cache: int, read_ahead: int, now: float) -> float:
        busy = load["from"] <= now < load["until"]
        return real(cache, read_ahead, now) * (0.6 if busy else 1.0)

    nas = Nas(box, tmp_path, speed)
    nas.tuner.autotune()
    while nas.tuner.autotuner.running.role != "candidate" or nas.tuner.autotuner.running.phase < 1:
        nas.run()  # the ladder, the read-ahead reference, into its first candidate
    load["from"], load["until"] = nas.clock.now + 15, nas.clock.now + 120
    view = nas.sweep()
    assert view.state == "done"
    moved = [s for s in view.steps if (s.note or "").startswith("not counted: the reference")]
    assert moved and all(s.role == "candidate" and s.score is None for s in moved)
    assert view.chosen == {"stripe_cache_size": 16384, "read_ahead_kb": 384}


def test_a_ladder_step_under_a_passing_load_is_measured_again(box, tmp_path):
    # A reader on the array for two minutes (its I/O shows in md2's /proc/diskstats line): the
    # ladder cannot return to a reference, so a step whose own I/O differs from the step before
    # is measured again, once the load has passed.
    real = by_cache(REAL_KERNEL)
    load = {"from": math.inf, "until": math.inf}

    def busy(now: float) -> bool:
        return load["from"] <= now < load["until"]

    def speed(cache: int, read_ahead: int, now: float) -> float:
        return real(cache, read_ahead, now) * (0.6 if busy(now) else 1.0)

    nas = Nas(box, tmp_path, speed, own_io=lambda now: 8000.0 if busy(now) else 0.0)
    nas.tuner.autotune()
    while nas.knob(STRIPE_CACHE) < 4096:
        nas.run()
    load["from"], load["until"] = nas.clock.now, nas.clock.now + 90
    view = nas.sweep()
    assert view.state == "done", view.reason
    again = [s for s in view.steps if (s.note or "").endswith("measured again")]
    assert again and all("own I/O on md2 moved" in s.note for s in again)
    assert all(s.score is None for s in again)
    assert view.chosen["stripe_cache_size"] == 16384


def test_a_load_that_stays_starts_the_ladder_comparison_afresh(box, tmp_path):
    real = by_cache(REAL_KERNEL)
    load = {"from": math.inf}

    def speed(cache: int, read_ahead: int, now: float) -> float:
        return real(cache, read_ahead, now) * (0.6 if now >= load["from"] else 1.0)

    nas = Nas(box, tmp_path, speed, own_io=lambda now: 8000.0 if now >= load["from"] else 0.0)
    nas.tuner.autotune()
    while nas.knob(STRIPE_CACHE) < 4096:
        nas.run()
    load["from"] = nas.clock.now
    view = nas.sweep()
    assert view.state == "done", view.reason
    steps = [s for s in view.steps if s.knob == "stripe_cache_size"]
    before = [s for s in steps if (s.note or "").startswith("measured under another load")]
    assert [s.value for s in before] == [513]
    assert all(s.score is None for s in before)
    assert view.chosen["stripe_cache_size"] == 16384


def test_the_button_and_the_api_say_why_a_sweep_cannot_start(tree, tmp_path):
    idle_box(tree)
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite", demo=True, demo_open=True
    )
    with TestClient(create_app(settings)) as client:
        wait_for(lambda: client.app.state.tuner.latest, 10, "the first tick")
        page = client.get("/").text
        # nothing syncs: the page offers no sweep; a request that asks anyway hears why not
        assert 'action="/ui/autotune"' not in page and ">Auto-tune</button>" not in page
        panel = client.post("/ui/autotune", headers={"HX-Request": "true"})
        assert "no array is syncing: auto-tune measures a running sync" in panel.text
        refused = client.post("/api/autotune", json={"array": "md2"})
        assert refused.status_code == 409
        assert refused.json()["detail"]["message"] == (
            "md2 runs no resync, recovery or reshape: nothing to measure on"
        )
        assert client.post("/api/autotune", json={"array": "sda"}).status_code == 422


def test_a_full_disk_mid_sweep_puts_the_kernel_back_first(box, small_disk):
    nas = Nas(box, small_disk.path, by_cache(REAL_KERNEL))
    nas.tuner.autotune()
    nas.run(60)
    assert not nas.at_originals()
    small_disk.fill()
    nas.run(120)
    assert nas.tuner.autotuner.running is None
    assert nas.at_originals()  # the kernel first, whatever the journal can record
    assert nas.tuner.autotuner.view(nas.tuner.conn).state == "ended"  # the page stops polling
    small_disk.free()
    nas.run()
    assert journal.open_session(nas.tuner.conn) is None  # the revert is journaled once it can be


def test_a_schedule_window_opening_mid_sweep_wins(nas: Nas):
    nas.tuner.autotune()  # 22:13:20 UTC
    scheduler.add(nas.tuner.conn, "quiet", "22:15", "23:00", nas.clock())
    nas.run(600)
    view = nas.tuner.autotuner.view(nas.tuner.conn)
    assert view.state == "cancelled"
    assert view.reason == "quiet was applied during the sweep (by hand or a schedule): it wins"
    assert nas.tree.read("sys/block/md2/md/sync_speed_min") == "1000\n"
    nas.run(3600)  # 23:00: the window ends, and with it the session the sweep shared
    assert nas.at_originals()


def test_a_step_without_progress_says_so_in_words_not_as_an_infinite_error(box, tmp_path):
    # md made no progress at 4096 (a stall): no line through its readings, so no ± to give.
    def stalls_at_4096(cache: int, read_ahead: int, now: float) -> float:
        return 0.0 if cache == 4096 else 20000.0

    nas = Nas(box, tmp_path, stalls_at_4096)
    nas.tuner.autotune()
    view = nas.sweep()
    notes = [s.note or "" for s in view.steps if s.knob == "stripe_cache_size"]
    assert any("too few readings to tell its speed" in note for note in notes), notes
    assert not any("inf" in (s.note or "") for s in view.steps), view.steps
