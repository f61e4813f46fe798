"""The ETA model: edge cases, regimes and which changes start one, the max limit's cap, the knee
only when disk-bound, the calibrated range, and "what if I boost"."""

import itertools
import random

import pytest

from app.forecast.boost import CLEAN_BENCH, MODEL_BOOST_RATIO, boost_forecast
from app.forecast.model import STALL_S, Forecast, ProgressSample, RunProgress, forecast
from app.forecast.physics import (
    KNEE_BY_KERNEL,
    KNEE_SPEEDUP,
    Limits,
    grow_knee,
    kernel_generation,
)
from app.forecast.regime import MAX_CHECKPOINTS

T0 = 1_700_000_000.0
TOTAL = 10_000_000
DSM = Limits(speed_min=10_000, speed_max=200_000, stripe_cache=256)


def steady(
    seconds: float, speed: float, start_ts: float = T0, start_done: float = 0, step: float = 5
) -> list[ProgressSample]:
    """Samples every `step` s of a run moving at `speed` blocks/s."""
    count = int(seconds // step)
    return [
        (start_ts + i * step, int(start_done + i * step * speed), TOTAL) for i in range(count + 1)
    ]


def feed(
    run: RunProgress, samples: list[ProgressSample], limits: Limits, event: str | None = None
) -> None:
    for i, (ts, done, total) in enumerate(samples):
        run.add(ts, done, total, limits, event if i == 0 else None)


def left_s(fc: Forecast) -> float:
    assert fc.status in ("ok", "settling") and fc.eta is not None and fc.as_of is not None, fc
    return fc.eta - fc.as_of


# ---- edge cases


def test_no_samples_gives_no_number() -> None:
    fc = forecast([])
    assert fc.status == "insufficient" and fc.eta is None and fc.reason


def test_a_young_run_is_measured_before_it_gets_a_number() -> None:
    fc = forecast(steady(10, 1000))
    assert fc.status == "insufficient" and fc.eta is None and "measuring" in (fc.reason or "")
    assert forecast(steady(15, 1000)).status == "ok"  # four samples over 15 s: a number


def test_a_run_sampled_every_30_s_gets_a_number_from_its_second_sample() -> None:
    """Every row without a number shows finish= instead: at 30 s sampling a 3-minute recovery
    waited a minute (a third of its rows) for its first number."""
    assert forecast(steady(0, 1000, step=30)).status == "insufficient"
    fc = forecast(steady(30, 1000, step=30))
    assert fc.status == "ok" and left_s(fc) == pytest.approx((TOTAL - 30_000) / 1000, rel=0.01)


def test_samples_without_numbers_are_skipped() -> None:
    rows: list[ProgressSample] = [(T0, None, None), (T0 + 1, 5, 0)]  # type: ignore[list-item]
    assert forecast(rows).status == "insufficient"


def test_stalled_run_gives_no_number() -> None:
    samples = steady(600, 1000) + [(T0 + 600 + s, 600_000, TOTAL) for s in range(10, 400, 10)]
    fc = forecast(samples)
    assert fc.status == "stalled" and fc.eta is None and "no progress" in (fc.reason or "")


def test_a_pause_shorter_than_the_stall_limit_is_not_a_stall() -> None:
    pause = [(T0 + 600 + s, 600_000, TOTAL) for s in range(10, int(STALL_S) - 10, 10)]
    assert forecast(steady(600, 1000) + pause).status == "ok"


def test_done_beyond_total_is_finished_at_the_first_full_sample() -> None:
    samples = steady(100, 1000, start_done=TOTAL - 200_000)
    samples += [(T0 + 110, TOTAL + 5, TOTAL), (T0 + 120, TOTAL + 900, TOTAL)]
    fc = forecast(samples)
    assert fc.status == "done" and fc.eta == fc.low == fc.high == T0 + 110
    assert fc.progress == 1.0 and fc.remaining_blocks == 0


def test_restart_at_zero_forgets_the_old_run() -> None:
    before = steady(3600, 1000)
    after = steady(600, 400, start_ts=T0 + 3610)
    fc = forecast(before + after)
    assert left_s(fc) == pytest.approx((TOTAL - 600 * 400) / 400, rel=0.01)


def test_progress_in_jumps_is_smoothed() -> None:
    """At low limits progress arrives in jumps: every 6th one-second sample moves."""
    samples = [(T0 + s, (s // 6) * 6 * 800, TOTAL) for s in range(0, 900)]
    fc = forecast(samples)
    assert left_s(fc) == pytest.approx((TOTAL - samples[-1][1]) / 800, rel=0.02)


def staircase(seconds: float, speed: float, period: float, step: float = 1) -> list[ProgressSample]:
    """md's view of a sync held low: the position moves once every `period` s by a window."""
    return [
        (T0 + i * step, int((i * step) // period * period * speed), TOTAL)
        for i in range(int(seconds // step) + 1)
    ]


def test_a_flat_spell_no_longer_than_a_normal_step_does_not_move_the_eta() -> None:
    """A staircase of 16 s steps sampled every second: the ETA stays put through each flat
    spell and through each jump (it used to creep later by a second a second, then jump back)."""
    run = RunProgress()
    etas = []
    for i, sample in enumerate(staircase(11_000, 800, 16.0)):
        run.add(*sample, limits=Limits(1_000, 800, 256))
        if i >= 10_000:
            etas.append(run.forecast().eta)
    truth = T0 + TOTAL / 800
    assert max(etas) - min(etas) < 3.0  # type: ignore[type-var, operator]
    assert all(abs(eta - truth) < 20 for eta in etas)  # type: ignore[operator]


def test_a_regime_younger_than_two_of_mds_steps_keeps_its_guess() -> None:
    """Batch h's 5.10 grow held by its max over a 16384 cache: md moved a window every
    25-30 s; 25 s past the knee its position had crept 1.6 % after a flat spell, and that pace,
    measured over less than one of its steps, put the finish 439 s away where 38 s were left.
    A regime that spans fewer than two of the run's normal steps keeps its guess."""
    run = RunProgress(knee=2 / 3)
    samples = staircase(6_675, 1_000, 25.0, step=5)  # to the first step past the knee
    for sample in samples:
        run.add(*sample)
    ts, done, _ = samples[-1]
    assert run.forecast().regime == "knee"
    for i in range(1, 6):  # flat for 20 s, then a creep of 0.2 %
        run.add(ts + 5 * i, done + (20_000 if i == 5 else 0), TOTAL)
    fc = run.forecast()
    assert fc.settling and left_s(fc) < (TOTAL - done) / 1_000


def test_a_pace_measured_from_the_settled_point_waits_for_two_steps() -> None:
    """Batch j's 6.12 resync: its max lowered from 8000 to 4000, md moved a window
    every ~20 s; the regime was measured from its settled point (30 s after the change) over one
    flat spell and a creep, and its ETA said 701 s where 184 were left, for one sample. The
    measuring window, not the regime, must span two of md's steps."""
    old, new = Limits(1_000, 8_000, 256), Limits(1_000, 4_000, 256)
    run = RunProgress()
    done, t = 0, 0
    while t < 600:  # at the old max, a window every 20 s
        run.add(T0 + t, done, TOTAL, old)
        t += 5
        if t % 20 == 0:
            done += 20 * 8_000
    etas = []
    while t < 1_000:  # at the new max, a window every 20 s, a creep 15 s into each
        run.add(T0 + t, done, TOTAL, new)
        fc = run.forecast()
        if fc.eta is not None:
            etas.append(fc.eta - (T0 + t) - (TOTAL - done) / 4_000)
        t += 5
        if t % 20 == 0:
            done += 20 * 4_000 - 2_000
        elif t % 20 == 15:
            done += 2_000
    assert max(abs(e) for e in etas) < 0.3 * (TOTAL - done) / 4_000


def test_a_stall_much_longer_than_any_step_still_shows() -> None:
    samples = staircase(600, 800, 16.0)
    flat = [(T0 + 600 + s, samples[-1][1], TOTAL) for s in range(1, 400)]
    run = RunProgress()
    etas = []
    for sample in samples + flat:
        run.add(*sample)
        etas.append(run.forecast())
    before = etas[len(samples) - 1]  # 8 s into a step (the last one came at 592 s)
    delayed = etas[len(samples) + 59]  # 68 s flat: 52 s longer than any step
    assert delayed.eta is not None and before.eta is not None
    assert delayed.eta - before.eta == pytest.approx(52, abs=2)
    assert etas[-1].status == "stalled"


def test_a_ramp_up_to_the_max_is_over_once_it_is_held() -> None:
    """A run under a max of 6000 ramps from 4200 to 6000 over its first 40 %, then sits at the
    max (seen on the real kernel): past 60 % the pace is the max, not the ramp's average."""
    limits = Limits(1_000, 6_000, 256)
    run = RunProgress()
    done, ts = 0.0, T0
    while done < 0.6 * TOTAL:
        run.add(ts, int(done), TOTAL, limits)
        progress = done / TOTAL
        done += 5 * (4_200 + 1_800 * min(1.0, progress / 0.4))
        ts += 5
    fc = run.forecast()
    assert fc.bound == "max limit"
    assert fc.speed_blocks_s == pytest.approx(6_000, rel=0.01)


def test_a_run_that_keeps_a_pace_past_its_max_is_not_capped_below_it() -> None:
    """A grow over a 16384 stripe cache held by a max of 2500 ran at 2880 (real kernel 6.1,
    batch d): the ETA is the measured pace, not the 1.07 x max md keeps with a small cache."""
    limits = Limits(1_000, 2_500, 16_384)
    run = RunProgress()
    for ts, done, total in steady(600, 2_880):
        run.add(ts, done, total, limits)
    fc = run.forecast()
    assert fc.bound == "max limit"
    assert left_s(fc) == pytest.approx((TOTAL - 600 * 2_880) / 2_880, rel=0.01)


def test_a_five_minute_and_a_five_day_run_of_the_same_shape_agree() -> None:
    """Windows count samples and progress, not seconds: scale time by 1440, same answer."""
    answers = []
    for scale in (1.0, 1440.0):
        run = RunProgress()
        done = 0.0
        for i in range(120):  # 120 samples, with a slow spell in the middle
            run.add(T0 + i * scale, int(done), TOTAL, DSM)
            done += 3_000 if 40 <= i < 60 else 10_000  # blocks per sample, whatever its length
        fc = run.forecast()
        answers.append((fc.eta - fc.as_of) / scale)  # type: ignore[operator]
    assert answers[0] == pytest.approx(answers[1], rel=1e-6)


def test_speed_falling_towards_inner_tracks_is_extrapolated() -> None:
    """HDD zones: speed falls linearly with progress from 2000 to 1000 blocks/s."""
    samples: list[ProgressSample] = []
    done, ts = 0.0, T0
    while done < 0.5 * TOTAL:
        samples.append((ts, int(done), TOTAL))
        done += 60 * 2000 * (1 - 0.5 * done / TOTAL)
        ts += 60
    truth, d = 0.0, done
    while d < TOTAL:
        truth += 1
        d += 2000 * (1 - 0.5 * d / TOTAL)
    fc = forecast(samples)
    assert fc.trend == pytest.approx(0.5, abs=0.05)
    assert left_s(fc) == pytest.approx(truth, rel=0.03)


# ---- regimes: only a change that can move the speed starts one


def test_bursts_of_competing_io_count_in_proportion() -> None:
    """Every 20 min, 5 min at a quarter speed: the future average, not the burst, decides."""
    samples: list[ProgressSample] = []
    done = 0.0
    for i in range(6 * 360):
        samples.append((T0 + i * 10, int(done), TOTAL))
        done += 10 * (100 if (i * 10) % 1200 < 300 else 400)
    average = (300 * 100 + 900 * 400) / 1200
    fc = forecast(samples)
    truth = (TOTAL - samples[-1][1]) / average
    assert left_s(fc) == pytest.approx(truth, rel=0.03)
    assert fc.low is not None and fc.high is not None and fc.as_of is not None
    assert fc.low <= fc.as_of + truth <= fc.high


def test_lowering_the_max_under_the_speed_holds_the_run_at_the_new_max_at_once() -> None:
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    lowered = Limits(1_000, 5_000, 256)
    ts, done = T0 + 605, 600 * 8_000 + 5 * 5_000
    run.add(ts, done, TOTAL, lowered, "limits")
    fc = run.forecast()
    assert fc.status == "settling" and fc.regime == "limits"
    assert left_s(fc) == pytest.approx((TOTAL - done) / 5_000, rel=0.01)


def test_after_a_lowered_max_the_guess_holds_until_md_settles() -> None:
    """md's throttle averages over ~30 s: lowered from 8000 to 4000, a real resync (6.12, batch
    f) stood still for 15 s, then jumped at twice the max. Measured from the change, that read
    600-7600 KiB/s; the new max holds until the regime has settled, then it is measured."""
    run = RunProgress()
    feed(run, steady(600, 8_000), Limits(1_000, 8_000, 256))
    lowered = Limits(1_000, 4_000, 256)
    ts, done = T0 + 600, 600 * 8_000
    rows = [(ts + 5 * i, done, TOTAL) for i in range(1, 4)]  # 15 s flat
    rows += [(ts + 15 + 5 * i, done + 5 * i * 8_000, TOTAL) for i in range(1, 5)]  # catching up
    run.add(ts + 0.1, done, TOTAL, lowered, "limits")
    for row in rows:
        run.add(*row, lowered)
        fc = run.forecast()
        assert fc.status == "settling" and fc.speed_blocks_s == pytest.approx(4_000), row
    last = rows[-1]
    feed(run, steady(60, 4_000, start_ts=last[0] + 5, start_done=last[1] + 20_000), lowered)
    fc = run.forecast()
    assert fc.status == "ok" and fc.speed_blocks_s == pytest.approx(4_000, rel=0.1)


def test_an_uncertain_guess_is_measured_as_soon_as_it_can_be() -> None:
    """A raised max frees the run by what its disks allow: nothing to wait for, the new pace is
    measured from four samples over 15 s (the long real runs' changes: 32.8 % when it waited)."""
    run = RunProgress()
    feed(run, steady(600, 5_000), Limits(1_000, 5_000, 256))
    freed = Limits(1_000, 200_000, 256)
    after = steady(20, 12_000, start_ts=T0 + 605, start_done=600 * 5_000 + 5 * 12_000)
    feed(run, after, freed, "limits")
    fc = run.forecast()
    assert fc.status == "ok" and fc.speed_blocks_s == pytest.approx(12_000, rel=0.01)


def test_a_young_pace_past_the_max_is_not_yet_the_runs_own() -> None:
    """Over less than twice md's throttle window a pace past the max is md catching up (a
    start, a flat spell): the ETA keeps to the max's overshoot. Kept up longer, it is the run's
    own (a large stripe cache), as in the test above."""
    limits = Limits(1_000, 2_500, 16_384)
    run = RunProgress()
    for ts, done, total in steady(40, 3_500):
        run.add(ts, done, total, limits)
    fc = run.forecast()
    assert fc.bound == "max limit"
    assert left_s(fc) == pytest.approx((TOTAL - 40 * 3_500) / (2_500 * 1.07), rel=0.01)
    for ts, done, total in steady(120, 3_500)[9:]:
        run.add(ts, done, total, limits)
    assert left_s(run.forecast()) == pytest.approx((TOTAL - 120 * 3_500) / 3_500, rel=0.01)


def test_raising_the_max_far_above_a_disk_bound_speed_changes_nothing() -> None:
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    before = run.forecast()
    raised = Limits(10_000, 500_000, 256)
    feed(run, steady(300, 8_000, start_ts=T0 + 605, start_done=605 * 8_000), raised, "limits")
    fc = run.forecast()
    assert fc.regime == "start" and fc.status == "ok"
    assert fc.regime_start == before.regime_start


def test_raising_the_max_that_held_the_run_starts_a_faster_regime() -> None:
    held = Limits(1_000, 5_000, 256)
    run = RunProgress()
    feed(run, steady(600, 5_000), held)
    raised = Limits(1_000, 50_000, 256)
    run.add(T0 + 605, 600 * 5_000 + 5 * 5_000, TOTAL, raised, "limits")
    fc = run.forecast()
    assert fc.status == "settling" and fc.regime == "limits"
    assert fc.speed_blocks_s is not None and 5_000 < fc.speed_blocks_s <= 50_000
    assert fc.high is not None and fc.as_of is not None
    assert fc.high - fc.as_of >= (TOTAL - 600 * 5_000) / 5_000 * 0.99  # no faster is possible


def test_raising_the_min_over_a_speed_held_at_it_by_other_io_pushes_to_it() -> None:
    held_at_min = Limits(1_000, 200_000, 256)
    run = RunProgress()
    feed(run, steady(600, 1_000), held_at_min)
    raised = Limits(3_000, 200_000, 256)
    run.add(T0 + 605, 605 * 1_000, TOTAL, raised, "limits")
    fc = run.forecast()
    assert fc.status == "settling" and fc.speed_blocks_s == pytest.approx(3_000)


def test_raising_the_min_over_a_disk_bound_speed_under_it_changes_nothing() -> None:
    """md throttles only above the min: under it the disks bind (seen on the real kernel)."""
    run = RunProgress()
    feed(run, steady(600, 4_000), DSM)  # 4000 KiB/s under DSM's min of 10000
    run.add(T0 + 605, 605 * 4_000, TOTAL, Limits(50_000, 200_000, 256), "limits")
    assert run.forecast().regime == "start"


def test_a_stripe_cache_change_starts_a_regime_only_when_disk_bound() -> None:
    disk_bound = RunProgress()
    feed(disk_bound, steady(600, 8_000), DSM)
    bigger = Limits(10_000, 200_000, 16_384)
    disk_bound.add(T0 + 605, 605 * 8_000, TOTAL, bigger, "stripe_cache")
    assert disk_bound.forecast().regime == "stripe_cache"
    held = Limits(1_000, 8_000, 256)
    at_max = RunProgress()
    feed(at_max, steady(600, 8_000), held)
    at_max.add(T0 + 605, 605 * 8_000, TOTAL, Limits(1_000, 8_000, 16_384), "stripe_cache")
    assert at_max.forecast().regime == "start"


def test_an_apply_without_known_limits_starts_a_regime() -> None:
    slow = steady(3600, 500)
    fast = steady(1200, 2500, start_ts=T0 + 3600, start_done=3600 * 500)[1:]
    fc = forecast(slow + fast, events=[(T0 + 3600, "apply")])
    assert fc.regime == "apply" and fc.regime_start == T0 + 3600
    assert left_s(fc) == pytest.approx((TOTAL - fast[-1][1]) / 2500, rel=0.02)


def test_right_after_an_apply_the_previous_pace_is_shown_as_settling() -> None:
    samples = [*steady(3600, 500), (T0 + 3610, 3600 * 500 + 25_000, TOTAL)]
    fc = forecast(samples, events=[(T0 + 3600, "apply")])
    assert fc.status == "settling" and fc.settling and fc.eta is not None
    assert fc.speed_blocks_s == pytest.approx(500, rel=0.02)


def test_right_after_a_revert_the_pace_before_boost_is_shown_not_the_boosted_one() -> None:
    """Boost took the run from 5,000 to 12,000 blocks/s; right after the revert md's
    30 s average still reads near 12,000, but the finish is the untuned pace's."""
    boosted = Limits(600_000, 2_000_000, 16_384)

    def boost_then_revert(run: RunProgress, start: float, done: float, span: float) -> float:
        """`span` s untuned then `span` s boosted; the revert's first samples still boosted."""
        feed(run, steady(span, 5_000, start, done), DSM)
        done += span * 5_000
        feed(run, steady(span, 12_000, start + span + 5, done + 5 * 5_000), boosted, "apply")
        done += 5 * 5_000 + span * 12_000
        for i in range(1, 4):  # 15 s: still settling
            event = "revert" if i == 1 else None
            run.add(start + 2 * span + 5 + 5 * i, done + 5 * i * 12_000, TOTAL, DSM, event)
        return done + 15 * 12_000

    run = RunProgress()
    boost_then_revert(run, T0, 0, 300)
    fc = run.forecast()
    assert fc.status == "settling" and fc.regime == "revert", fc
    assert fc.speed_blocks_s == pytest.approx(5_000, rel=0.05), fc
    # A second boost and revert: the untuned pace is again the one before boost.
    again = RunProgress()
    done = boost_then_revert(again, T0, 0, 200)
    boost_then_revert(again, T0 + 420, done, 200)
    assert again.forecast().speed_blocks_s == pytest.approx(5_000, rel=0.05)


# ---- the max limit's cap and the grow's knee


def test_grow_knee_from_geometry() -> None:
    assert grow_knee("raid5", (4, 3)) == pytest.approx(2 / 3)
    assert grow_knee("raid6", (6, 5)) == pytest.approx(3 / 4)
    assert grow_knee("raid5", (4, None)) is None
    assert grow_knee("raid5", (3, 4)) is None  # a shrink has no such knee
    assert grow_knee("raid1", (3, 2)) is None


def test_a_disk_bound_grow_runs_faster_past_the_knee() -> None:
    knee = 2 / 3
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), DSM)  # 20 %, far under the max
    fc = run.forecast()
    done = 2000 * 1000
    expected = (knee * TOTAL - done) / 1000 + (1 - knee) * TOTAL / (1000 * KNEE_SPEEDUP)
    assert fc.bound == "disks"
    assert left_s(fc) == pytest.approx(expected, rel=0.01)
    assert fc.low < fc.eta < fc.high  # type: ignore[operator]


def test_a_grow_held_by_its_max_gets_no_knee_speed_up() -> None:
    """Three real reshapes held by their max ran at 1.03-1.07x of it after the knee."""
    knee = 2 / 3
    held = Limits(1_000, 1_000, 256)
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), held)
    fc = run.forecast()
    assert fc.bound == "max limit"
    assert left_s(fc) == pytest.approx((TOTAL - 2000 * 1000) / 1000, rel=0.01)


def test_a_grow_held_loosely_by_a_large_stripe_cache_speeds_up_past_its_knee() -> None:
    """16384 entries keep 64 MiB a member in flight, 65 s at a max of 1000 KiB/s: more than md's
    throttle window (30 s of marks), which then holds such a grow loosely. Past the knee the ETA
    expects (1 + share / 2) = 1.5x the max, the range up to (1 + 1.25 share) = 2.25x."""
    knee = 2 / 3
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), Limits(1_000, 1_000, 16_384))
    fc = run.forecast()
    assert fc.bound == "max limit" and fc.low is not None and fc.as_of is not None
    before = (knee * TOTAL - 2000 * 1000) / 1000
    assert left_s(fc) == pytest.approx(before + (1 - knee) * TOTAL / 1500, rel=0.01)
    assert fc.low - fc.as_of <= before + (1 - knee) * TOTAL / 2250 + 5
    assert fc.high is not None and fc.high - fc.as_of >= (TOTAL - 2000 * 1000) / 1000


def test_how_loosely_a_cache_holds_a_grow_grows_with_its_share_of_the_throttle_window() -> None:
    """Batch f: over a 16384 cache at a max of 5000 (13 s in flight, 0.44 of md's 30 s window)
    a grow ran 1.30x its max past the knee, at 2500 (0.87) 1.81-2.05x. Half the window in flight
    (3750 entries at 1000 KiB/s): 1.25x expected, not the 1.5x of the whole-window case."""
    knee = 2 / 3
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), Limits(1_000, 1_000, 3_750))
    before = (knee * TOTAL - 2000 * 1000) / 1000
    assert left_s(run.forecast()) == pytest.approx(before + (1 - knee) * TOTAL / 1250, rel=0.01)


def test_a_small_stripe_cache_holds_the_grow_at_its_max_past_the_knee() -> None:
    """The same grow with 2048 entries (8 MiB a member, 8 s at the max): held tightly, no
    speed-up (a real one ran 0.99x its max past the knee)."""
    knee = 2 / 3
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), Limits(1_000, 1_000, 2_048))
    assert left_s(run.forecast()) == pytest.approx((TOTAL - 2000 * 1000) / 1000, rel=0.01)


def just_past_the_knee(limits: Limits) -> tuple[RunProgress, ProgressSample]:
    """A 3->4 grow at 1000 blocks/s up to its knee, then one sample past it."""
    run = RunProgress(2 / 3)
    before = steady(6670, 1000)
    feed(run, before, limits)
    past = (before[-1][0] + 5, before[-1][1] + 8_000, TOTAL)
    run.add(*past, limits)
    return run, past


def test_past_the_knee_a_loosely_held_grow_is_measured_afresh() -> None:
    loose = Limits(1_000, 1_000, 16_384)
    run, past = just_past_the_knee(loose)
    fc = run.forecast()
    assert fc.status == "settling" and fc.regime == "knee"
    assert fc.speed_blocks_s == pytest.approx(1500, rel=0.02)
    after = steady(300, 1800, start_ts=past[0], start_done=past[1])
    feed(run, after[1:], loose)
    fc = run.forecast()
    assert fc.status == "ok" and fc.regime == "knee"
    assert left_s(fc) == pytest.approx((TOTAL - after[-1][1]) / 1800, rel=0.03)


def test_the_knee_speed_up_is_the_kernel_generations_own() -> None:
    """Batch f: on 6.12 a disk-bound grow ran 1.15x past its knee (4300 KiB/s either side) where
    6.1's ran 4.6-7.4x. Unknown kernels keep 6.1's figure."""
    knee = 2 / 3
    left = (knee * TOTAL - 2000 * 1000) / 1000
    for release, speedup in (
        ("6.12.117+deb13-amd64", KNEE_BY_KERNEL["6.12"][0]),
        ("6.1.0-56-amd64", KNEE_SPEEDUP),
        (None, KNEE_SPEEDUP),
    ):
        run = RunProgress(knee, release)
        feed(run, steady(2000, 1000), DSM)
        fc = run.forecast()
        assert left_s(fc) == pytest.approx(left + (1 - knee) * TOTAL / (1000 * speedup), rel=0.01)
    assert KNEE_BY_KERNEL["6.12"][0] < 1.5


def test_the_knee_speed_up_is_capped_by_the_max() -> None:
    knee = 2 / 3
    limits = Limits(1_000, 2_000, 256)  # 1000/s is disk-bound, but 4x would pass the max
    run = RunProgress(knee)
    feed(run, steady(2000, 1000), limits)
    done = 2000 * 1000
    cap = 2_000 * 1.07
    expected = (knee * TOTAL - done) / 1000 + (1 - knee) * TOTAL / cap
    assert left_s(run.forecast()) == pytest.approx(expected, rel=0.01)


def test_past_the_knee_the_new_speed_is_measured() -> None:
    knee = 2 / 3
    run = RunProgress(knee)
    before = steady(6670, 1000)
    after = steady(600, 4000, start_ts=before[-1][0], start_done=before[-1][1])[1:]
    feed(run, before + after, DSM)
    fc = run.forecast()
    assert fc.regime == "knee" and fc.status == "ok"
    assert left_s(fc) == pytest.approx((TOTAL - after[-1][1]) / 4000, rel=0.03)


def test_right_after_the_knee_the_sped_up_pace_is_settling() -> None:
    run, _ = just_past_the_knee(DSM)
    fc = run.forecast()
    assert fc.status == "settling" and fc.regime == "knee"
    assert fc.speed_blocks_s == pytest.approx(1000 * KNEE_SPEEDUP, rel=0.02)


# ---- the range


def test_the_range_covers_most_of_a_noisy_runs_truth() -> None:
    """A disk-bound run whose pace wanders (bursts of other I/O at random): the range holds the
    true finish at 80 % or more of the rows past 10 %, and is not absurdly wide."""
    rng = random.Random(7)
    rows, done, ts = [], 0.0, T0
    while done < TOTAL:
        rows.append((ts, int(done), TOTAL))
        ts += 5
        done += 5 * (2_000 if rng.random() < 0.2 else 10_000) * rng.uniform(0.8, 1.2)
    rows.append((ts, TOTAL, TOTAL))
    finish = ts
    run = RunProgress()
    inside, widths = [], []
    for sample in rows[:-1]:
        run.add(*sample, limits=DSM)
        fc = run.forecast()
        left = finish - sample[0]
        if sample[1] / TOTAL >= 0.1 and left >= 60 and fc.low is not None:
            inside.append(fc.low <= finish <= fc.high)  # type: ignore[operator]
            widths.append((fc.high - fc.low) / left)  # type: ignore[operator]
    assert sum(inside) / len(inside) >= 0.8
    # The fast side reaches the pace without the bursts (they may stop): wide, but still
    # under 0.7 of the time left.
    assert sorted(widths)[len(widths) // 2] < 0.7


def test_the_range_reaches_a_pace_that_changed_for_good() -> None:
    """A resync whose other I/O stopped: 2000 blocks/s for 15 min, then 6000 for 200 s. The
    regime's average is the ETA; the range reaches what the recent pace would give."""
    samples = steady(900, 2_000) + steady(200, 6_000, T0 + 905, 900 * 2_000 + 5 * 6_000)
    fc = forecast(samples, ())
    assert fc.low is not None and fc.as_of is not None
    at_recent = (TOTAL - samples[-1][1]) / 6_000
    assert fc.low - fc.as_of <= at_recent < left_s(fc)


def test_a_pace_that_drifts_one_way_moves_the_eta_towards_its_newest_third() -> None:
    """A resync that speeds up as it goes (its other I/O fading): 2000, then 3000, then 4500
    blocks/s. The ETA is nearer what the newest pace gives than the window's average; the
    range still holds the newest pace."""
    samples = steady(300, 2_000)
    samples += steady(300, 3_000, T0 + 305, samples[-1][1] + 5 * 3_000)[:]
    samples += steady(300, 4_500, T0 + 610, samples[-1][1] + 5 * 4_500)
    fc = forecast(samples)
    left_newest = (TOTAL - samples[-1][1]) / 4_500
    average = samples[-1][1] / (samples[-1][0] - T0)
    left_average = (TOTAL - samples[-1][1]) / average
    assert abs(left_s(fc) - left_newest) < abs(left_average - left_newest) * 0.8
    assert fc.low is not None and fc.as_of is not None
    assert fc.low - fc.as_of <= left_newest


def test_bursts_that_come_and_go_are_no_drift() -> None:
    """Bursts every 60 s (20 s at a fifth of the pace): the ETA is the run's average pace,
    not the pace between bursts, wherever the newest burst falls."""
    for offset in range(0, 60, 10):
        samples, done = [], 0.0
        for i in range(200):
            ts = T0 + 5 * i
            samples.append((ts, int(done), TOTAL))
            done += 5 * (2_000 if (5 * i + offset) % 60 < 20 else 10_000)
        fc = forecast(samples, ())
        average = samples[-1][1] / (samples[-1][0] - T0)
        assert left_s(fc) == pytest.approx((TOTAL - samples[-1][1]) / average, rel=0.12)


def test_the_range_reaches_the_pace_without_bursts() -> None:
    """A recovery slowed by bursts of other I/O a third of the time: if they stop, it ends at
    the quick spells' pace, and the range reaches that finish."""
    samples, done = [], 0.0
    for i in range(80):
        samples.append((T0 + 5 * i, int(done), TOTAL))
        done += 5 * (3_000 if i % 12 < 4 else 12_000)
    fc = forecast(samples, ())
    assert fc.low is not None and fc.as_of is not None
    assert fc.low - fc.as_of <= (TOTAL - samples[-1][1]) / 12_000 < left_s(fc)


def test_deep_bursts_may_stop_so_the_eta_leans_towards_the_quick_spells() -> None:
    """Bursts of other I/O holding a disk-bound resync to a tenth of its pace, 60 % of the time
    so far (the held-out resyncs that speed up once they stop): the ETA leans part of the way from
    the window's pace towards the quick spells', and the range still reaches the window's."""
    samples, done = [], 0.0
    for i in range(60):
        samples.append((T0 + 5 * i, int(done), TOTAL))
        done += 5 * (1_000 if i % 10 < 6 else 10_000)
    fc = forecast(samples, ())
    left = TOTAL - samples[-1][1]
    average = samples[-1][1] / (samples[-1][0] - T0)
    assert left / 10_000 < left_s(fc) < 0.85 * left / average
    assert fc.high is not None and fc.as_of is not None
    assert fc.high - fc.as_of >= left / average


def test_mds_jumps_after_flat_spells_are_no_bursts() -> None:
    """md held low moves a window every 25 s, creeping a little 20 s after each jump: its quick
    spells are the jumps, not a pace the run would keep if something stopped. The ETA is the
    staircase's own pace, not pulled towards the jumps (batch c's staircases and the long 1 s
    runs lost 1-15 points without this)."""
    samples = []
    for i in range(40):
        t = 5 * i
        done = (t // 25) * 25_000 + (500 if t % 25 >= 20 else 0)
        samples.append((T0 + t, done, TOTAL))
    fc = forecast(samples, ())
    pace = samples[-1][1] / (samples[-1][0] - T0)
    assert left_s(fc) == pytest.approx((TOTAL - samples[-1][1]) / pace, rel=0.1)


def test_the_pull_towards_the_quick_spells_grows_smoothly_with_their_lead() -> None:
    """No threshold: as the quick spells' lead over the window's pace grows, the ETA moves
    smoothly (a threshold at 1.8x moved a real resync's ETA by 40 s from one sample to the
    next as the lead crossed it), from none at all up to the full pull."""
    etas = []
    for quick in range(10_000, 40_001, 500):
        samples, done = [], 0.0
        for i in range(60):
            samples.append((T0 + 5 * i, int(done), TOTAL))
            done += 5 * (quick if i % 10 < 4 else 5_000)
        etas.append(left_s(forecast(samples, ())))
    steps = [abs(b - a) / a for a, b in itertools.pairwise(etas)]
    assert max(steps) < 0.05, max(steps)


def test_checkpoints_stay_bounded_on_a_long_run() -> None:
    run = RunProgress()
    for ts, done, total in steady(86_400 * 3, 30, step=5):
        run.add(ts, done, total, DSM)
    assert len(run.regime.checkpoints) <= MAX_CHECKPOINTS


# ---- what if I boost


def test_boost_from_a_measured_ratio() -> None:
    fc = forecast(steady(3600, 1000))
    measured = boost_forecast(fc, measured_ratio=5.0)
    assert measured is not None and measured.source == "measured" and measured.ratio == 5.0
    assert measured.eta - fc.as_of == pytest.approx(left_s(fc) / 5)  # type: ignore[operator]


def test_boost_of_a_run_held_by_its_max_goes_up_towards_the_new_max() -> None:
    held = Limits(1_000, 5_000, 256)
    run = RunProgress()
    feed(run, steady(600, 5_000), held)
    estimate = boost_forecast(run.forecast(), boost_max=200_000)
    assert estimate is not None and estimate.source == "limit" and estimate.ratio > 1.4
    assert estimate.why.startswith("its speed limit holds it at 5.1 MB/s: boost lifts the limit")
    assert "the disks decide how far" in estimate.why


def test_boost_of_a_run_held_by_its_max_is_capped_by_its_disks_last_check() -> None:
    """Held by the max, boost gives the ratio of the limits, but no more than the
    disks did in the last check; without a limit worth lifting it would not help."""
    held = Limits(1_000, 5_000, 256)
    run = RunProgress()
    feed(run, steady(600, 5_000), held)
    fc = run.forecast()
    estimate = boost_forecast(fc, boost_max=200_000, disks=("check", 15_000.0))
    assert estimate is not None and estimate.source == "limit"
    assert estimate.ratio == pytest.approx(15_000 / fc.speed_blocks_s)  # type: ignore[operator]
    assert "the disks did 15.4 MB/s in its last check" in estimate.why
    assert estimate.eta < fc.eta  # type: ignore[operator]
    no_gain = boost_forecast(fc, boost_max=200_000, disks=("check", 5_000.0))
    assert no_gain is not None and not no_gain.helps and no_gain.eta is None
    assert "the disks already run about as fast as boost could make them" in no_gain.why


def test_boost_of_a_disk_bound_run_uses_the_real_kernel_figure() -> None:
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    estimate = boost_forecast(run.forecast(), boost_max=400_000)
    assert estimate is not None and estimate.source == "model"
    assert estimate.ratio == MODEL_BOOST_RATIO
    assert estimate.why.startswith("the disks set the pace, and boost made HDD-like disks")
    assert estimate.low < estimate.eta < estimate.high  # type: ignore[operator]
    assert boost_forecast(forecast([])) is None


def test_the_disk_bound_figure_is_the_clean_bench_of_the_kernel_and_names_it() -> None:
    """A generation with clean trials (host load under 1.5 per core) gets its own figure, with
    its release and date; one without gets 6.1's and says it is not yet measured cleanly,
    never a figure measured while the build machine was busy (5.10's 0.87x was one)."""
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    on_61 = boost_forecast(run.forecast(), kernel_release="6.1.0-56-amd64")
    assert on_61 is not None and on_61.ratio == CLEAN_BENCH["6.1"].ratio == 1.29
    assert on_61.why == (
        "the disks set the pace, and boost made HDD-like disks ×1.29 faster on Linux 6.1.0-56 "
        "(clean bench, 2026-11-26)"
    )
    for release, generation in (("6.12.117+deb13-amd64", "6.12"), ("6.6.30-amd64", "6.6")):
        other = boost_forecast(run.forecast(), kernel_release=release)
        assert other is not None and other.ratio == MODEL_BOOST_RATIO
        assert other.why.endswith(f"; Linux {generation} is not yet measured cleanly)")
    assert kernel_generation("4.4.302+") == "4.4" and kernel_generation(None) is None


def test_a_grow_held_by_an_md_thread_near_a_full_core_is_not_offered_boost() -> None:
    """With md0_raid5 at 87-98 % of a core (QEMU held to 0.6 of a host core, 5.10) boost made
    the grow slower, 0.80x: where the diagnosis says the CPU holds the run, nothing is promised;
    a speed limit that holds it is still lifted by boost."""
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    estimate = boost_forecast(run.forecast(), cpu_bound=("md0_raid5", 0.93))
    assert estimate is not None and not estimate.helps and estimate.eta is None
    assert estimate.why == (
        "md0_raid5 uses 93% of a CPU core: the CPU sets the pace, and a larger stripe cache made "
        "such a grow slower (Linux 5.10 with QEMU held to 0.6 of a core: boost ×0.80): boost "
        "would not make it faster"
    )
    held = RunProgress()
    feed(held, steady(600, 5_000), Limits(1_000, 5_000, 256))
    lifted = boost_forecast(held.forecast(), boost_max=200_000, cpu_bound=("md0_raid5", 0.93))
    assert lifted is not None and lifted.source == "limit" and lifted.helps


def test_a_boost_measured_slower_here_is_not_offered_again() -> None:
    run = RunProgress()
    feed(run, steady(600, 8_000), DSM)
    estimate = boost_forecast(
        run.forecast(), 0.8, measured_on="md2 of this box, where mdboost put it back"
    )
    assert estimate is not None and not estimate.helps and estimate.source == "measured"
    assert estimate.why == (
        "it measured ×0.8 on md2 of this box, where mdboost put it back: boost did not make it "
        "faster here"
    )


def test_a_min_above_the_max_is_the_ceiling() -> None:
    """md throttles only above the min: with min 10000 and max 8000 it ran at ~9800 (real)."""
    run = RunProgress()
    feed(run, steady(600, 9_800), Limits(10_000, 8_000, 256))
    fc = run.forecast()
    assert fc.bound == "max limit"
    assert left_s(fc) == pytest.approx((TOTAL - 600 * 9_800) / 9_800, rel=0.01)


def test_a_run_that_stood_still_then_jumped_past_the_knee_still_forecasts() -> None:
    """Found by the notification tests: a stall (frozen disks) and then a jump past the knee
    divided by a zero pace."""
    run = RunProgress(0.5)
    for i in range(20):
        run.add(T0 + i * 5.0, 0, TOTAL, DSM)
    run.add(T0 + 105.0, int(0.6 * TOTAL), TOTAL, DSM)
    assert run.forecast().status in ("ok", "settling", "insufficient", "stalled")


def test_a_diagnosis_event_is_no_knob_change_even_without_limits() -> None:
    run = RunProgress()
    for ts, done, total in steady(600, 8_000):
        run.add(ts, done, total)  # limits unknown: any knob event would begin a regime
    before = run.forecast()
    run.add(T0 + 605, 605 * 8_000, TOTAL, None, "diagnosis")
    fc = run.forecast()
    assert fc.regime == "start" and fc.regime_start == before.regime_start
