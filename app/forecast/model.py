"""Pure ETA model of one md run: a finish time with a calibrated range, or why there is none.

Built on what md does (docs/forecast.md; physics.py measures it), not on a curve fit:
- md never syncs faster than the effective max limit, so every projected speed is capped by it;
- a knob change starts a new regime only if it can change the speed (a max lowered under the
  speed, a max raised while the speed sits at it, a min raised over a speed held down by other
  I/O, a min lowered under a speed held at it, a stripe cache change on a disk-bound array);
- a RAID4/5/6 grow speeds up after its knee (old / new data disks of progress) only when it is
  disk-bound: a run held by its max stays at the max;
- bursts of competing I/O come and go, so the share of time they took in the regime so far is
  the best guess for the rest: the speed is the regime's average, not the last 30 s;
- a run held by its max is measured over its recent samples only: a ramp up to the max is over
  once it gets there, and the max holds it from then on;
- md reports progress as a staircase when a sync is held low (the position moves a window or a
  checkpoint at a time): the pace is measured from step to step (their size over their period),
  the ETA is anchored at the newest step, and a flat spell no longer than the run's own normal
  step moves nothing; only a longer one (a real stall) delays the finish, second for second.
The range comes from this run's own past forecast errors (how far the pace forecast at earlier
checkpoints of the regime missed the progress that followed), blended with a prior while the
regime is young, plus the knee's and a settling regime's own uncertainty.
Windows count samples and progress, never fixed spans of a run, so a 5-minute and a 5-day run
behave alike. Adding a sample is O(1) in time and memory and a forecast O(checkpoints): the
sampler keeps one of these per open run and a poll costs the same on day 9 as on minute 1.
"""

import collections
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, TypeVar

from app.forecast.physics import (
    FREED_RANGE,
    HELD_KNEE_OVERSHOOT,
    MAX_OVERSHOOT,
    Limits,
    after_change,
    cap,
    ceiling,
    held_by_max,
    knee_speedup,
    known,
    loose_knee,
    loosely_held,
    seconds_left,
)
from app.forecast.regime import Point, Regime
from app.forecast.trend import falling_trend

ProgressSample = tuple[float, int, int]  # (unix seconds, done blocks, total blocks)
RunEvent = tuple[float, str]  # (unix seconds, kind: "apply", "revert", "limits", ...)
StoredSample = TypeVar("StoredSample", bound=tuple[Any, ...])  # a sample, its unix seconds first
# Events that report rather than change anything: app/diagnosis's verdict changes, a step of the
# wall clock (the samples before it were shifted: the series goes on). They never begin a regime,
# and never hide a knob change stored in the same tick.
REPORT_EVENTS = frozenset({"diagnosis", "clock_step"})


def sample_event(kinds: Iterable[str]) -> str | None:
    """The knob change a sample carries, of the events stored since the sample before it
    (`kinds`, oldest first): the last one that changes something."""
    changes = [kind for kind in kinds if kind not in REPORT_EVENTS]
    return changes[-1] if changes else None


def with_events(
    samples: Iterable[StoredSample], events: Iterable[RunEvent]
) -> Iterator[tuple[StoredSample, str | None]]:
    """Each of a run's samples (its unix seconds first) with the knob change it carries, from
    the run's events (both oldest first): how a stored run's events meet its samples."""
    pending = collections.deque(events)
    for sample in samples:
        since = []
        while pending and pending[0][0] <= sample[0]:
            since.append(pending.popleft()[1])
        yield sample, sample_event(since)


Status = Literal["ok", "done", "stalled", "settling", "insufficient"]

# A restart: progress falls back by more than this fraction of the total.
RESTART_DROP = 0.10
STALL_S = 120.0  # no progress for this long while running: stalled (or STALL_STEPS steps)
STALL_STEPS = 4.0
# A regime with a guess (a change's, the knee's) keeps it until its measuring window spans this
# many of the run's normal steps: on a staircase a pace measured over less is one creep after a
# flat spell, and on real runs such a pace said ten times the time that was left.
YOUNG_STEPS = 2.0
# md's steps: the gaps between samples that showed progress, the newest STEP_GAPS of them. A gap
# over STEP_OUTLIER x the next longest is a one-off (a stall), not a step; the longest of the
# rest is the run's normal step.
STEP_GAPS = 32
STEP_OUTLIER = 2.0
# A run is held by its max when its pace over this later share of its regime, and at least this
# many normal steps, sits at the max; it is then measured over its usual window, less a ramp.
RECENT_SHARE = 0.33
RECENT_STEPS = 4.0
# ... and from when its pace first came within this share of the recent one (the ramp's end).
HELD_SHARE = 0.95
# Right after a regime starts md averages its speed over the last ~30 s: skip that transient.
TRANSIENT_S = 30.0
# A pace past the max's overshoot counts as the run's own only over a window this long (twice
# md's ~30 s throttle window): over less, md may be catching up after a flat spell.
ABOVE_MAX_S = 60.0
# A pace that drifts one way through the window's three thirds (each third this much or more
# beyond the one before at the end) is taken halfway to its newest third: a resync that speeds
# up as other I/O stops, a recovery that slows as the host gets busy. Bursts that come and go
# seldom line up so; a run held by its max has nowhere to drift.
DRIFT = 1.1
DRIFT_WEIGHT = 0.5
# The fast side of the range reaches this quantile of the pace between checkpoints: bursts of
# other I/O may stop, and a range that ignored the quick spells missed most recoveries' finish.
CLEAN_SPELLS = 0.9
# Bursts of other I/O come and go, and on a NAS they end (a backup, a scan): the share of the
# regime they took so far is a noisy guess of the share ahead. When the quick spells run well
# above the window's pace, the pace is taken part of the way (log) towards theirs: none at
# RATIO_LOW x, BURST_PULL of the way from RATIO_HIGH x, smoothly between (a threshold made the
# ETA jump by 40 s from sample to sample as the ratio crossed it). The range's slow side still
# reaches the window's pace. On the recorded runs where it acts, the pull that would have hit the
# true finish is 0.6-1.0 on quiet hosts (median per run; docs/forecast.md). Not where md's
# position moves in steps: FLAT_STEPS of the newest samples showed no progress, or the run's
# normal step is STEP_RUN x its median gap; there the quick spells are md's jumps after flat
# spells, not a free pace (the staircases forecast worse with the pull). Bursty disk-bound runs
# sampled every 5 s show progress at every sample.
RATIO_LOW = 1.4
RATIO_HIGH = 2.2
BURST_PULL = 0.6
FLAT_STEPS = 0.1
STEP_RUN = 1.3
# mdboost's own tuning: the first of these events in a stretch of tuning remembers the pace before
# it; "revert" settles back on that pace (never on the tuned one, which md's 30 s average still
# shows for a minute), within this range.
TUNING_EVENTS = frozenset({"apply", "autotune"})
REVERT_RANGE = (1.25, 0.75)  # fast, slow factors on the pace before tuning
REVERT_REASON = "the pace before tuning, until the new one is measured"
SETTLING_REASON = "the pace is the previous one, scaled by the change"


@dataclass(frozen=True)
class Forecast:
    """The finish time of one run, or why there is none (`reason`)."""

    status: Status
    reason: str | None = None
    eta: float | None = None  # unix seconds
    low: float | None = None  # unix seconds, earliest plausible finish
    high: float | None = None  # unix seconds, latest plausible finish
    as_of: float | None = None  # unix seconds of the newest sample used
    progress: float | None = None  # 0..1
    remaining_blocks: int | None = None  # 1 KiB blocks (units of the samples)
    speed_blocks_s: float | None = None  # the projected speed now
    regime_start: float | None = None  # unix seconds
    regime: str | None = None  # what began the current regime: "start", an event kind, "knee"
    knee: float | None = None  # progress of the grow's knee, when there is one
    bound: str | None = None  # "max limit", "disks" (disk-bound or yielding), None if unknown
    trend: float = 0.0  # fraction the speed falls from 0 % to 100 % (HDD zones)
    settling: bool = False  # the number is the previous regime's, scaled by the change
    whole_run_s: float | None = None  # seconds a whole run takes at this pace (pool planning)
    # blocks/s measured before the grow's knee, once past it: a later phase's pace (pool)
    pace_before_knee: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Pace:
    """The pace a forecast projects (blocks/s), and the paces its range reaches for."""

    speed: float | None  # measured, else the regime's settling guess (None: neither yet)
    settling: bool  # `speed` is the guess, not measured
    recent: float | None  # over the regime's later share: where the pace is heading
    average: float | None  # the window's plain pace, before the drift and the bursts
    clean: float | None  # the quick spells' pace, between bursts of other I/O


@dataclass(frozen=True)
class _Road:
    """The rest of the run at the pace now."""

    speed: float  # blocks/s now (on the HDD trend line when there is one)
    held: bool  # held by its max
    limits: Limits  # as this run honours them (its own max past an overshoot)
    knee_ahead: float | None  # progress of the knee it speeds up at (never when held)
    loose_at: float | None  # progress of the knee of a grow its max holds loosely
    trend: float  # fraction the speed falls from 0 % to 100 % (HDD zones)

    @property
    def bound(self) -> str | None:
        """What holds the run: "max limit", "disks" (disk-bound or yielding), None if unknown."""
        if self.limits.speed_max is None:
            return None
        return "max limit" if self.held else "disks"


@dataclass(frozen=True)
class _SecondsLeft:
    """Seconds to the finish at the likely pace, and at the range's fast and slow paces."""

    likely: float
    fastest: float
    slowest: float


def reverted(fc: Forecast, untuned: float) -> Forecast:
    """`fc` at the pace before tuning (`untuned`, blocks/s), settling: what the page shows in
    the instant after a revert, until the next sample begins the revert's own regime."""
    now, speed = fc.as_of, fc.speed_blocks_s
    if fc.status not in ("ok", "settling") or now is None or not speed or untuned <= 0:
        return fc
    if fc.eta is None or fc.low is None or fc.high is None:
        return fc
    slower = speed / untuned
    return replace(
        fc,
        status="settling",
        reason=REVERT_REASON,
        eta=now + (fc.eta - now) * slower,
        low=now + (fc.low - now) * slower / REVERT_RANGE[0],
        high=now + (fc.high - now) * slower / REVERT_RANGE[1],
        speed_blocks_s=untuned,
        regime="revert",
        settling=True,
    )


def forecast(
    samples: Iterable[ProgressSample],
    events: Iterable[RunEvent] = (),
    knee: float | None = None,
    kernel: str | None = None,
) -> Forecast:
    """Forecast the finish of one run from its samples (oldest first) and its tuning events."""
    run = RunProgress(knee, kernel)
    for (ts, done, total), kind in with_events(samples, sorted(events)):
        run.add(ts, done, total, event=kind)
    return run.forecast()


class RunProgress:
    """One run's progress since its last restart, kept as samples arrive: O(1) time and memory
    per sample, so the sampler can keep one per open run for days."""

    def __init__(self, knee: float | None = None, kernel: str | None = None) -> None:
        """`knee`: a grow's knee (progress, 0..1); `kernel`: the running kernel's release
        (its generation's knee speed-up, physics.knee_speedup)."""
        self.knee = knee if knee is not None and 0 < knee < 1 else None
        self.speedup, self.speedup_range = knee_speedup(kernel)
        self._restart()

    def _restart(self) -> None:
        self.last: Point | None = None
        self.step: Point | None = None  # the newest sample that showed progress
        self.gaps: list[float] = []  # seconds between the newest samples that showed progress
        self.flat: collections.deque[bool] = collections.deque(maxlen=STEP_GAPS)  # no progress?
        self.total = 0
        self.last_progress_ts = 0.0
        self.finished_ts: float | None = None
        self.limits = Limits()
        self.regime = Regime(Point(0.0, 0.0, 0), "start")
        self.knee_passed = False
        self.pace_before_knee: float | None = None
        # blocks/s before mdboost's tuning began, while it is applied; None when untuned
        self.untuned: float | None = None
        self.tuned = False
        self.back_to_untuned = False  # the regime now is a revert's, settling on `untuned`

    def add(
        self,
        ts: float | None,
        done: int | None,
        total: int | None,
        limits: Limits | None = None,
        event: str | None = None,
    ) -> None:
        """One sample; rows without numbers or out of time order are skipped. `limits` are the
        effective limits at this sample (None: unknown); `event` names a knob change made at
        this sample's time (a new regime begins if it can change the speed)."""
        if ts is None or done is None or total is None or total <= 0:
            return
        if self.last is not None and ts <= self.last.ts:
            return
        done = min(max(done, 0), total)
        last = self._continued(done, total)
        limits = limits if limits is not None else Limits()
        point = Point(ts, float(done), last.count + 1 if last is not None else 0)
        if last is None:
            self.regime = Regime(point, "start")
        else:
            self._on_change(point, limits, None if event in REPORT_EVENTS else event)
        progressed = last is None or done > last.done
        self._note_step(point, progressed, first=last is None)
        self._note_finish_and_knee(point, done, total)
        self._settle(point, progressed)
        self.last = point
        self.total = total
        self.limits = limits
        if progressed:
            self.regime.checkpoint(point)

    def _continued(self, done: int, total: int) -> Point | None:
        """The run's newest sample, or None when this one begins it again: a restart (progress
        falls back by more than RESTART_DROP of the total) or another total is a new run."""
        last = self.last
        if last is not None and (total != self.total or last.done - done > RESTART_DROP * total):
            self._restart()
            return None
        return last

    def _note_finish_and_knee(self, point: Point, done: int, total: int) -> None:
        """The first sample at 100 % is the finish; the first past a grow's knee begins its
        regime."""
        if done >= total and self.finished_ts is None:
            self.finished_ts = point.ts
        if self.knee is not None and not self.knee_passed and done >= self.knee * total:
            self._on_knee(point)

    def _note_step(self, point: Point, progressed: bool, first: bool) -> None:
        """Keep md's steps: whether this sample moved, and the gap since the last one that did."""
        self.flat.append(not progressed)
        if not progressed:
            return
        self.last_progress_ts = point.ts
        if self.step is not None and not first:
            self.gaps.append(point.ts - self.step.ts)
            del self.gaps[:-STEP_GAPS]
        self.step = point

    def _settle(self, point: Point, progressed: bool) -> None:
        """The regime's settled point: its first step TRANSIENT_S after it began, once md's 30 s
        average no longer remembers the regime before."""
        regime = self.regime
        if regime.settled is None and progressed and point.ts >= regime.first.ts + TRANSIENT_S:
            regime.settled = point

    # ---- regimes

    def _on_change(self, point: Point, new: Limits, event: str | None) -> None:
        old = self.limits
        if new == old and not event:
            return
        speed = self._current_speed()
        if event in TUNING_EVENTS and not self.tuned:
            self.tuned, self.untuned = True, speed
        elif event == "revert":
            untuned, self.tuned, self.untuned = self.untuned, False, None
            if untuned is not None and untuned > 0:
                # Back to the pace before tuning, not the tuned one md's 30 s average still
                # shows for the next minute (capped by the limits now in force).
                self._begin(point, event, cap(untuned, new), REVERT_RANGE)
                self.back_to_untuned = True
                return
        if speed is None:
            self._begin(point, event or "limits")
            return
        if not known(old) or not known(new):
            # Without the limits, a tuning event may change the speed (as mdboost's own apply
            # and revert do): a new regime from the previous pace.
            if event:
                spread = (FREED_RANGE[1], 1.0) if event == "apply" else (1.0, 0.3)
                self._begin(point, event, speed, spread)
            return
        guess = after_change(speed, old, new)
        if guess is not None:
            self._begin(point, event or "limits", *guess)

    def _on_knee(self, point: Point) -> None:
        self.knee_passed = True
        speed = self._current_speed()
        if speed is None or speed <= 0:
            # A run that made no progress before it jumped past the knee (disks stopped) has no
            # pace to scale.
            return
        self.pace_before_knee = speed
        if held_by_max(speed, self.limits):
            # Held by its max, md stays at the max past the knee: nothing changes, unless the
            # stripe cache holds md's throttle loosely: then the grow speeds up past its max.
            if loosely_held(self.limits):
                top = ceiling(self.limits)
                likely_x, fast_x = loose_knee(self.limits)
                likely = max(speed, likely_x * top)
                self._begin(point, "knee", likely, (fast_x * top / likely, speed / likely))
            return
        if self.untuned is not None:
            self.untuned *= self.speedup  # past the knee, the untuned pace would have risen too
        likely = cap(speed * self.speedup, self.limits)
        fastest = cap(speed * self.speedup_range[1], self.limits)
        slowest = cap(speed * self.speedup_range[0], self.limits)
        self._begin(point, "knee", likely, (fastest / likely, slowest / likely))

    def _begin(
        self,
        point: Point,
        kind: str,
        settle: float | None = None,
        spread: tuple[float, float] = (1.0, 1.0),
    ) -> None:
        self.regime = Regime(point, kind, settle, spread)
        self.back_to_untuned = False

    def _current_speed(self) -> float | None:
        """The pace now: the current regime's measured speed, else its settling guess."""
        measured = self.regime.measure(self.step)
        return measured if measured is not None else self.regime.settle_speed

    def _window_s(self, step: Point) -> float:
        """Seconds the current regime's measuring window spans up to `step`."""
        start = self.regime.window_start(step)
        return step.ts - start.ts if start is not None else 0.0

    def normal_step(self) -> float:
        """Seconds: the longest of the run's recent steps (gaps between samples that showed
        progress) that is no one-off: a gap over STEP_OUTLIER x the next longest is a stall, not
        a step. The sampling interval on a smooth run; md's window period on a staircase, even
        when the position also creeps a little between its jumps."""
        gaps = sorted(self.gaps, reverse=True)
        for longest, next_longest in itertools.pairwise(gaps):
            if longest <= STEP_OUTLIER * next_longest:
                return longest
        return gaps[-1] if gaps else 0.0

    def moves_in_steps(self, step_s: float) -> bool:
        """md's position moves a window at a time (FLAT_STEPS of the newest samples showed no
        progress, or the normal step `step_s` is STEP_RUN x the median gap), so the run's quick
        spells are md's jumps after flat spells, not a pace free of other I/O."""
        gaps = sorted(self.gaps)
        if gaps and step_s >= STEP_RUN * gaps[len(gaps) // 2]:
            return True
        return sum(self.flat) >= FLAT_STEPS * len(self.flat)

    # ---- the forecast

    def forecast(self) -> Forecast:
        """The forecast from the samples so far: the pace now, the road ahead at that pace,
        the seconds left (likely, fastest, slowest), and the range around them."""
        last = self.last
        if last is None:
            return Forecast("insufficient", "no progress samples yet")
        progress = last.done / self.total
        base = Forecast(
            "insufficient",
            as_of=last.ts,
            progress=progress,
            remaining_blocks=int(self.total - last.done),
            knee=self.knee,
        )
        step_s = self.normal_step()
        ended = self._finished_or_stalled(base, last, step_s)
        if ended is not None:
            return ended
        regime = self.regime
        base = replace(base, regime_start=regime.first.ts, regime=regime.kind)
        step = self.step if self.step is not None else last
        pace = self._pace(step, step_s)
        if pace.speed is None:
            why = "the run started" if regime.kind == "start" else f"{regime.kind} changed the pace"
            return replace(base, reason=f"{why} {last.ts - regime.first.ts:.0f} s ago; measuring")
        if pace.speed <= 0:
            return replace(base, status="stalled", reason="no progress in the current regime")
        road = self._road_ahead(pace.speed, pace.settling, step, progress)
        seconds = self._seconds_left(pace, road, progress)
        eta, low, high = self._finish_times(step, last.ts, step_s, seconds)
        reason = None
        if pace.settling:
            reason = REVERT_REASON if self.back_to_untuned else SETTLING_REASON
        return replace(
            base,
            status="settling" if pace.settling else "ok",
            reason=reason,
            eta=eta,
            low=low,
            high=high,
            speed_blocks_s=road.speed,
            bound=road.bound,
            settling=pace.settling,
            trend=road.trend,
            whole_run_s=self._whole_run_seconds(road.speed, road.held),
            pace_before_knee=self.pace_before_knee,
        )

    def _finished_or_stalled(self, base: Forecast, last: Point, step_s: float) -> Forecast | None:
        """The answer when the run has ended, or has moved nothing for a stall's length
        (STALL_S, or STALL_STEPS of its normal steps `step_s`); None while it runs."""
        now = last.ts
        if self.finished_ts is not None and last.done >= self.total:
            finished = self.finished_ts
            return replace(base, status="done", eta=finished, low=finished, high=finished)
        if now - self.last_progress_ts >= max(STALL_S, STALL_STEPS * step_s):
            minutes = (now - self.last_progress_ts) / 60
            return replace(base, status="stalled", reason=f"no progress for {minutes:.0f} min")
        return None

    def _pace(self, step: Point, step_s: float) -> _Pace:
        """The pace now, measured over the regime's window up to `step` (the newest step) and
        moved for a drift and for bursts that may stop; the settling guess while unmeasured."""
        regime, limits = self.regime, self.limits
        measured = regime.measure(step)
        if (
            measured is not None
            and regime.settle_speed is not None
            and self._window_s(step) < YOUNG_STEPS * step_s
        ):
            measured = None  # a window shorter than two of md's steps: the guess holds
        recent = regime.measure(step, RECENT_SHARE, RECENT_STEPS * step_s)
        if measured is not None and recent is not None and held_by_max(recent, limits):
            # Held by its max now: measured from when it got there, whatever the ramp before.
            measured = regime.measure_held(step, HELD_SHARE * recent) or measured
        # The pace of the run's quick spells, between bursts of other I/O (or md's jumps).
        clean = regime.spell_quantile(step, CLEAN_SPELLS)
        average = measured
        if measured is not None and not held_by_max(measured, limits):
            measured = _with_drift(measured, regime.thirds(step))
            if not self.moves_in_steps(step_s):
                measured = _bursts_may_stop(measured, clean, limits)
        if measured is None:
            return _Pace(regime.settle_speed, True, recent, average, clean)
        return _Pace(measured, False, recent, average, clean)

    def _road_ahead(self, speed: float, settling: bool, step: Point, progress: float) -> _Road:
        """What the rest of the run looks like at `speed`: held by its max or not, the knee it
        speeds up at (a loosely held grow's own), the max as it honours it, and the HDD trend."""
        limits = self.limits
        held = held_by_max(speed, limits)
        knee_ahead = self.knee if self.knee is not None and progress < self.knee else None
        # A grow held loosely by its max (a large stripe cache) speeds up past its knee too.
        loose_at = knee_ahead if held and loosely_held(limits) else None
        if held:
            knee_ahead = None
        if (
            held
            and speed > cap(speed, limits)
            and (settling or self._window_s(step) >= ABOVE_MAX_S)
        ):
            # This run keeps a pace past its max's overshoot (a large stripe cache: md throttles
            # a window at a time): the max as this run honours it is the measured pace. Only
            # once measured over more than md's own throttle window: a shorter one above the
            # max is md catching up after a flat spell, a change or the start.
            limits = replace(limits, speed_max=speed / MAX_OVERSHOOT)
        trend = 0.0 if settling or held else falling_trend(self.regime.checkpoints, self.total)
        if trend > 0:
            speed = self.regime.speed_at(trend, progress, self.total, step.ts)
        return _Road(speed, held, limits, knee_ahead, loose_at, trend)

    def _seconds_left(self, pace: _Pace, road: _Road, progress: float) -> _SecondsLeft:
        """Seconds to the finish at the likely pace, the fast side's and the slow side's."""
        total, speed = self.total, road.speed
        if road.loose_at is not None:
            after = max(speed, loose_knee(self.limits)[0] * ceiling(self.limits))
            likely = _two_paces(speed, after, progress, road.loose_at, total)
        else:
            likely = seconds_left(
                speed, progress, road.knee_ahead, self.speedup, road.limits, total, road.trend
            )
        fast_speed, slow_speed = self._range_paces(pace, road)
        fastest = self._fastest_seconds(fast_speed, pace.settling, road, progress)
        slowest = seconds_left(
            slow_speed,
            progress,
            road.knee_ahead,
            self.speedup_range[0],
            road.limits,
            total,
            road.trend,
        )
        return _SecondsLeft(likely, fastest, slowest)

    def _fastest_seconds(
        self, fast_speed: float, settling: bool, road: _Road, progress: float
    ) -> float:
        """Seconds to the finish at the range's fast pace, with the fast side of the knee."""
        total, top = self.total, ceiling(self.limits)
        loose_fast_x = loose_knee(self.limits)[1]
        if road.loose_at is not None:
            fast_pace = min(fast_speed, max(road.speed, top * MAX_OVERSHOOT))
            fast_after = max(fast_pace, loose_fast_x * top)
            return _two_paces(fast_pace, fast_after, progress, road.loose_at, total)
        if road.held and settling and loosely_held(self.limits):
            # Settling past a loosely held grow's knee: up to its fast pace.
            fast_pace = min(fast_speed, loose_fast_x * top)
            return seconds_left(fast_pace, progress, None, self.speedup, Limits(), total)
        # A grow held by its max gets no knee, but may still overshoot the max past it.
        knee, overshoot = road.knee_ahead, MAX_OVERSHOOT
        if road.held and self.knee is not None and progress < self.knee:
            knee, overshoot = self.knee, HELD_KNEE_OVERSHOOT
        return seconds_left(
            fast_speed,
            progress,
            knee,
            self.speedup_range[1],
            road.limits,
            total,
            road.trend,
            overshoot,
        )

    def _range_paces(self, pace: _Pace, road: _Road) -> tuple[float, float]:
        """The fast and slow paces (blocks/s) the range reaches: a settling guess's own range,
        else the recent pace either way, the window's plain pace (the bursts may go on as they
        were) and the quick spells' pace (they may stop)."""
        speed = road.speed
        if pace.settling:
            return speed * self.regime.settle_range[0], speed * self.regime.settle_range[1]
        if pace.recent is None or pace.recent <= 0:
            return speed, speed
        # The pace may have changed for good (a resync that speeds up once other I/O stops).
        fast_speed, slow_speed = max(speed, pace.recent), min(speed, pace.recent)
        if pace.average is not None and pace.average > 0:
            slow_speed = min(slow_speed, pace.average)
        # A run held by its max gains little from the quick spells: the max caps it.
        if pace.clean is not None:
            fast_speed = max(fast_speed, pace.clean)
        return fast_speed, slow_speed

    def _finish_times(
        self, step: Point, now: float, step_s: float, seconds: _SecondsLeft
    ) -> tuple[float, float, float]:
        """The finish and the range around it (unix seconds), counted from the newest step: a
        flat spell up to a normal step (`step_s`) long moves nothing, a longer one delays the
        finish by what it lasted beyond, and md's next step may come up to a normal step early
        or late. The range widens by this regime's own past errors over a like horizon."""
        q_low, q_high = self.regime.error_quantiles(step, seconds.likely)
        anchor = step.ts + max(0.0, now - step.ts - step_s)
        return (
            max(now, anchor + seconds.likely),
            max(now, anchor + seconds.fastest * math.exp(q_low) - step_s),
            max(now, anchor + seconds.slowest * math.exp(q_high) + step_s),
        )

    def _whole_run_seconds(self, speed: float, held: bool) -> float:
        """How long a whole run (0 to 100 %) takes at this pace: a queued pool array's turn."""
        knee = None if held else self.knee
        if knee is not None and self.knee_passed:
            speed /= self.speedup  # the pace before the knee
        return seconds_left(speed, 0.0, knee, self.speedup, self.limits, self.total)


def _two_paces(before: float, after: float, progress: float, knee: float, total: int) -> float:
    """Seconds from `progress` to 100 % at `before` up to the knee and `after` past it."""
    return (knee - progress) * total / before + (1.0 - knee) * total / after


def _with_drift(measured: float, thirds: tuple[float, float, float] | None) -> float:
    """The window's pace, moved towards its newest third when the pace drifts one way."""
    if thirds is None or min(thirds) <= 0:
        return measured
    first, middle, last = thirds
    if (last > middle * DRIFT and middle > first) or (last * DRIFT < middle and middle < first):
        return float(measured ** (1 - DRIFT_WEIGHT) * last**DRIFT_WEIGHT)
    return measured


def _bursts_may_stop(measured: float, clean: float | None, limits: Limits) -> float:
    """The window's pace, moved part of the way (log) towards its quick spells' pace (`clean`,
    capped by the max) when bursts of other I/O held it well below them: none at RATIO_LOW x,
    BURST_PULL of the way from RATIO_HIGH x."""
    if clean is None or measured <= 0:
        return measured
    clean = cap(clean, limits)
    share = (clean / measured - RATIO_LOW) / (RATIO_HIGH - RATIO_LOW)
    pull = BURST_PULL * min(1.0, max(0.0, share))
    return float(measured ** (1 - pull) * clean**pull)
