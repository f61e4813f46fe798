"""Pure ETA model over one run's samples: a finish time with a low/high range, or why not (issue 5).

The kernel's finish= divides what is left by the last ~30 s of speed (md.c, 10 marks x 3 s), so
it swings with every burst of competing I/O and knows nothing of tuning or of a grow's knee.
This model:
- cuts the run into regimes: a restart, each tuning event and a RAID5/6 grow's knee begin a new
  one, and only the current regime describes the future;
- takes the average speed over the later half of the regime, so bursts of competing I/O count
  in the proportion they had and will likely keep, and bends it by a falling trend when the
  regime shows one (HDD zones);
- before a grow's knee, plans the part after it at KNEE_SPEEDUP times the speed;
- sizes the range from how much the regime's speed varied between batches of at least 40 s,
  the knee's speed-up between KNEE_SPEEDUP_RANGE, and, until a regime shows a trend of its own,
  a speed that may still fall towards the inner tracks (UNSEEN_TREND) on the high side.
No I/O here: callers pass samples and events in, and the result out to the API or the CLI.
"""

import bisect
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

Sample = tuple[float, int, int]  # (unix seconds, done blocks, total blocks)
Event = tuple[float, str]  # (unix seconds, kind: "apply", "revert", ...)
Status = Literal["ok", "done", "stalled", "settling", "insufficient"]

# A restart: progress falls back by more than this fraction of the total (as app/sampler.py).
RESTART_DROP = 0.10
MIN_SAMPLES = 3
# At low limits progress arrives in jumps (DESIGN.md "Measured on a real kernel"): never judge a
# speed over less than this.
SMOOTH_S = 40.0
MAX_BATCHES = 12
RECENT_SHARE = 0.5  # the speed is the average over this later share of the regime
STALL_S = 120.0  # no progress for this long: stalled, no number
# The RAID5 grow knee (DESIGN.md): after old/new data disks of progress the reshape only writes.
# Disk-bound real arrays ran 4-10x faster after it, the simulator 3x, a CPU-bound emulated array
# with competing reads barely 1.5x: the central value is tuned on simulator seeds, the range
# covers all of them.
KNEE_SPEEDUP = 3.0
KNEE_SPEEDUP_RANGE = (1.5, 10.0)
TREND_MIN_BATCHES = 6
TREND_MIN_SPAN = 0.05  # progress the regime must cover before a trend is believed
TREND_T = 3.0  # t statistic a falling trend needs
TREND_MAX = 0.8  # the speed may fall at most this fraction from 0 % to 100 %
# HDD inner tracks run at roughly half to two thirds of the outer speed: until a regime shows
# its own trend, the high bound allows the speed to fall this fraction across the disk.
UNSEEN_TREND = 0.3
# The range: relative spread of batch speeds blended with a prior, plus a floor for what the
# model leaves out; Z sets the width (tuned on simulator seeds that are not the committed runs).
PRIOR_SPREAD = 0.25
PRIOR_WEIGHT = 2.0
MODEL_FLOOR = 0.06
Z = 1.5
# "What if I boost": without a measured effect, DESIGN.md's real-kernel figure (stripe cache
# 16384 on HDD-like disks: 1.40x), with a range from "no gain" to the seeds' 5x.
MODEL_BOOST_RATIO = 1.4
MODEL_BOOST_RANGE = (1.0, 5.0)
MEASURED_BOOST_SPREAD = 0.15


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
    speed_blocks_s: float | None = None  # the current regime's average speed
    regime_start: float | None = None  # unix seconds
    regime: str | None = None  # what began the current regime: "start", an event kind, "knee"
    knee: float | None = None  # progress of the grow's knee, when there is one
    trend: float = 0.0  # fraction the speed falls from 0 % to 100 % (HDD zones)
    whole_run_s: float | None = None  # seconds a whole run takes at this pace (pool planning)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BoostEstimate:
    """The forecast if the boost preset were applied now: always an estimate."""

    eta: float | None
    low: float | None
    high: float | None
    ratio: float  # speed with the boost / speed now
    source: Literal["measured", "model"]
    label: str = "estimate"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PoolMember:
    """One array of an SHR pool: reshaped already, reshaping now, or waiting its turn."""

    name: str
    state: Literal["done", "running", "queued"]
    size_blocks: int | None = None  # array size from mdstat, to scale a queued array's time
    forecast: Forecast | None = None  # for the running array


@dataclass(frozen=True)
class PoolForecast:
    status: Status
    reason: str | None = None
    eta: float | None = None
    low: float | None = None
    high: float | None = None
    phase: int | None = None  # 1-based number of the running array
    phases: int = 0
    members: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def grow_knee(level: str | None, raid_disks: tuple[int, int | None] | None) -> float | None:
    """Progress of a RAID5/6 grow's speed knee: old / new data disks; None for anything else."""
    parity = {"raid4": 1, "raid5": 1, "raid6": 2}.get(level or "")
    if parity is None or raid_disks is None or raid_disks[1] is None:
        return None
    new_data, old_data = raid_disks[0] - parity, raid_disks[1] - parity
    if old_data < 1 or new_data <= old_data:
        return None
    return old_data / new_data


def forecast(
    samples: Iterable[Sample], events: Iterable[Event] = (), knee: float | None = None
) -> Forecast:
    """Forecast the finish of one run from its samples (oldest first) and its tuning events."""
    run = RunProgress()
    for ts, done, total in samples:
        run.add(ts, done, total)
    return run.forecast(events, knee)


class RunProgress:
    """A run's progress since its last restart, kept as samples arrive: replaying a long run
    asks for a forecast after every row, so adding is O(1) and a forecast O(log n)."""

    def __init__(self) -> None:
        self._restart()

    def _restart(self) -> None:
        self.times: list[float] = []
        self.dones: list[float] = []  # clamped to [0, total]
        self.total = 0
        self.last_progress_ts = 0.0
        self.finished_ts: float | None = None

    def add(self, ts: float | None, done: int | None, total: int | None) -> None:
        """One sample; rows without numbers or out of time order are skipped."""
        if ts is None or done is None or total is None or total <= 0:
            return
        if self.times and ts <= self.times[-1]:
            return
        done = min(max(done, 0), total)
        if self.times and (total != self.total or self.dones[-1] - done > RESTART_DROP * total):
            self._restart()
        if not self.times or done > self.dones[-1]:
            self.last_progress_ts = ts
        if done >= total and self.finished_ts is None:
            self.finished_ts = ts
        self.times.append(ts)
        self.dones.append(float(done))
        self.total = total

    def forecast(self, events: Iterable[Event] = (), knee: float | None = None) -> Forecast:
        """The forecast from the samples so far; `events` are (ts, kind) tuning changes."""
        times, dones, total = self.times, self.dones, self.total
        if not times:
            return Forecast("insufficient", "no progress samples yet")
        ts_last, done_last = times[-1], dones[-1]
        progress = done_last / total
        base = Forecast(
            "insufficient",
            as_of=ts_last,
            progress=progress,
            remaining_blocks=int(total - done_last),
        )
        if self.finished_ts is not None and done_last >= total:
            finished = self.finished_ts
            return replace(base, status="done", eta=finished, low=finished, high=finished)
        if len(times) < MIN_SAMPLES:
            return replace(base, reason=f"{len(times)} sample(s); need {MIN_SAMPLES}")
        if ts_last - self.last_progress_ts >= STALL_S:
            minutes = (ts_last - self.last_progress_ts) / 60
            return replace(base, status="stalled", reason=f"no progress for {minutes:.0f} min")
        return _forecast_regime(base, times, dones, total, list(events), knee)


def _forecast_regime(
    base: Forecast,
    times: list[float],
    dones: list[float],
    total: int,
    events: list[Event],
    knee: float | None,
) -> Forecast:
    """Find the current regime, measure it and extrapolate to the finish."""
    ts_last, progress = times[-1], dones[-1] / total
    start, regime = times[0], "start"
    for ts, kind in events:
        if start < ts <= ts_last:
            start, regime = ts, kind
    knee = knee if knee is not None and 0 < knee < 1 else None
    knee_ts = _crossing_ts(times, dones, knee * total) if knee is not None else None
    if knee_ts is not None and knee_ts > start:
        start, regime = knee_ts, "knee"
    base = replace(base, regime_start=start, regime=regime, knee=knee)

    measured = _measure(times, dones, start, ts_last, total)
    speedup = 1.0
    if measured is None and regime == "knee":
        # Just past the knee: the regime before it, sped up by the model, until this one speaks.
        before = _measure(times, dones, _regime_before(times, events, knee_ts), knee_ts or 0, total)
        measured, speedup = before, KNEE_SPEEDUP
    if measured is None:
        why = "tuning changed" if regime != "start" else "the run started"
        reason = f"{why} {ts_last - start:.0f} s ago; measuring"
        return replace(base, status="settling", reason=reason)
    if measured.speed <= 0:
        return replace(base, status="stalled", reason="no progress in the current regime")

    ahead = knee if knee is not None and progress < knee else None
    remaining_s = _time_to_finish(measured, progress, ahead, speedup)
    spread = math.exp(Z * measured.spread(remaining_s))
    slower = replace(measured, trend=max(measured.trend, UNSEEN_TREND))
    low_s = remaining_s / spread
    high_s = _time_to_finish(slower, progress, ahead, speedup) * spread
    fast, slow = KNEE_SPEEDUP_RANGE[1], KNEE_SPEEDUP_RANGE[0]
    if ahead is not None:
        low_s = _time_to_finish(measured, progress, ahead, knee_speedup=fast) / spread
        high_s = _time_to_finish(slower, progress, ahead, knee_speedup=slow) * spread
    elif speedup != 1.0:
        low_s, high_s = low_s * speedup / fast, high_s * speedup / slow
    speed = measured.speed * speedup
    return replace(
        base,
        status="ok",
        eta=ts_last + remaining_s,
        low=ts_last + low_s,
        high=ts_last + high_s,
        speed_blocks_s=speed,
        trend=measured.trend,
        whole_run_s=_whole_run_seconds(total, speed, knee, progress),
    )


def boost_forecast(current: Forecast, measured_ratio: float | None = None) -> BoostEstimate | None:
    """The forecast if the boost preset were applied now.

    `measured_ratio` is this array's measured effect of past boosts (speed with the boost / speed
    without, from the tuning journal); without one the model's ratio is used. None when the
    current forecast has no number to scale.
    """
    eta, low, high, now = current.eta, current.low, current.high, current.as_of
    if current.status != "ok" or eta is None or low is None or high is None or now is None:
        return None
    source: Literal["measured", "model"]
    if measured_ratio is not None and measured_ratio > 0:
        ratio, source = measured_ratio, "measured"
        slow, fast = ratio / (1 + MEASURED_BOOST_SPREAD), ratio * (1 + MEASURED_BOOST_SPREAD)
    else:
        ratio, source = MODEL_BOOST_RATIO, "model"
        slow, fast = MODEL_BOOST_RANGE
    return BoostEstimate(
        eta=now + (eta - now) / ratio,
        low=now + (low - now) / fast,
        high=now + (high - now) / slow,
        ratio=ratio,
        source=source,
    )


def pool_forecast(members: Sequence[PoolMember]) -> PoolForecast:
    """An SHR pool's finish: the running array's forecast, then each queued array in turn at the
    running array's pace scaled by size (its arrays share the same disks)."""
    names = [m.name for m in members]
    running = [i for i, m in enumerate(members) if m.state == "running"]
    if not running:
        if members and all(m.state == "done" for m in members):
            return PoolForecast("done", None, phases=len(members), members=names)
        return PoolForecast("insufficient", "no array of the pool is reshaping", members=names)
    index = running[0]
    current = members[index]
    fc = current.forecast
    base = PoolForecast("insufficient", phase=index + 1, phases=len(members), members=names)
    if fc is None or fc.status != "ok" or fc.eta is None or fc.as_of is None:
        status: Status = fc.status if fc is not None else "insufficient"
        reason = f"{current.name}: {fc.reason if fc is not None else 'no forecast'}"
        return replace(base, status=status, reason=reason)
    eta, low, high = fc.eta, fc.low or fc.eta, fc.high or fc.eta
    whole_run_s = fc.whole_run_s
    # A queued array's turn is as uncertain as the running one's remainder (same disks, knee).
    left = max(eta - fc.as_of, 1e-9)
    low_ratio, high_ratio = (low - fc.as_of) / left, (high - fc.as_of) / left
    for member in members[index + 1 :]:
        if member.state == "done":
            continue
        if whole_run_s is None or not member.size_blocks or not current.size_blocks:
            return replace(base, reason=f"{member.name}: size unknown, cannot plan its turn")
        share = member.size_blocks / current.size_blocks
        eta += whole_run_s * share
        low += whole_run_s * share * low_ratio
        high += whole_run_s * share * high_ratio
    return replace(base, status="ok", eta=eta, low=low, high=high)


# ---- internals


@dataclass(frozen=True)
class _Regime:
    """What the current regime measured."""

    speed: float  # blocks/s averaged over the window
    total: int
    start_progress: float  # of the window
    end_progress: float
    seconds: float  # the window's length: the later RECENT_SHARE of the regime
    batches: float  # batches in the window
    batch_s: float
    spread_sq: float  # relative variance of the regime's batch speeds, blended with the prior
    trend: float  # fraction the speed falls from progress 0 to 1

    def spread(self, remaining_s: float) -> float:
        """Relative standard deviation of the remaining time."""
        estimate = self.spread_sq / self.batches
        future = self.spread_sq * self.batch_s / max(remaining_s, self.batch_s)
        return math.sqrt(estimate + future + MODEL_FLOOR**2)


def _done_at(times: list[float], dones: list[float], ts: float) -> float:
    i = bisect.bisect_left(times, ts)
    if i <= 0:
        return dones[0]
    if i >= len(times):
        return dones[-1]
    t0, t1 = times[i - 1], times[i]
    return dones[i - 1] + (dones[i] - dones[i - 1]) * (ts - t0) / (t1 - t0)


def _crossing_ts(times: list[float], dones: list[float], level: float) -> float | None:
    """When progress first reached `level` (interpolated), or None if it has not."""
    i = bisect.bisect_left(dones, level)  # progress only grows within a segment, nearly always
    if i >= len(dones):
        return None
    if i == 0 or dones[i] == dones[i - 1]:
        return times[i]
    f = (level - dones[i - 1]) / (dones[i] - dones[i - 1])
    return times[i - 1] + f * (times[i] - times[i - 1])


def _regime_before(times: list[float], events: list[Event], until: float | None) -> float:
    start = times[0]
    for ts, _ in events:
        if start < ts < (until or ts):
            start = ts
    return start


def _measure(
    times: list[float], dones: list[float], start: float, end: float, total: int
) -> _Regime | None:
    """Average speed, batch spread and trend of [start, end]; None while too short to judge."""
    seconds = end - start
    inside = bisect.bisect_right(times, end) - bisect.bisect_left(times, start)
    if seconds < SMOOTH_S or inside < MIN_SAMPLES:
        return None
    done_start, done_end = _done_at(times, dones, start), _done_at(times, dones, end)
    speed = (done_end - done_start) / seconds
    batches = max(1, min(MAX_BATCHES, int(seconds // SMOOTH_S)))
    edges = [start + seconds * i / batches for i in range(batches + 1)]
    at_edges = [_done_at(times, dones, t) for t in edges]
    batch_s = seconds / batches
    speeds = [(b - a) / batch_s for a, b in itertools.pairwise(at_edges)]
    middles = [(a + b) / 2 / total for a, b in itertools.pairwise(at_edges)]
    spread_sq = PRIOR_SPREAD**2
    if batches > 1 and speed > 0:
        variance = sum((s - speed) ** 2 for s in speeds) / (batches - 1) / speed**2
        spread_sq = ((batches - 1) * variance + PRIOR_WEIGHT * PRIOR_SPREAD**2) / (
            batches - 1 + PRIOR_WEIGHT
        )
    trend = 0.0
    if (done_end - done_start) / total >= TREND_MIN_SPAN:
        trend = _falling_trend(middles, speeds)
    # The speed to extrapolate: the regime's later part, so a drift inside the regime (a disk
    # warming up, a host growing busier) counts for what it is now.
    window_s = seconds * RECENT_SHARE if seconds * RECENT_SHARE >= SMOOTH_S else seconds
    done_window = _done_at(times, dones, end - window_s)
    return _Regime(
        speed=(done_end - done_window) / window_s,
        total=total,
        start_progress=done_window / total,
        end_progress=done_end / total,
        seconds=window_s,
        batches=max(1.0, batches * window_s / seconds),
        batch_s=seconds / batches,
        spread_sq=spread_sq,
        trend=trend,
    )


def _falling_trend(progress: list[float], speeds: list[float]) -> float:
    """Fraction the speed loses from progress 0 to 1, fitted on batches free of bursts (a burst
    holds the sync near speed_limit_min for minutes: those batches are far below the median)."""
    if len(speeds) < TREND_MIN_BATCHES:
        return 0.0
    median = sorted(speeds)[len(speeds) // 2]
    points = [(p, s) for p, s in zip(progress, speeds, strict=True) if s >= 0.7 * median]
    n = len(points)
    if n < TREND_MIN_BATCHES:
        return 0.0
    mean_p = sum(p for p, _ in points) / n
    mean_s = sum(s for _, s in points) / n
    sxx = sum((p - mean_p) ** 2 for p, _ in points)
    if sxx <= 0:
        return 0.0
    slope = sum((p - mean_p) * (s - mean_s) for p, s in points) / sxx
    intercept = mean_s - slope * mean_p
    residual = sum((s - intercept - slope * p) ** 2 for p, s in points) / (n - 2)
    stderr = math.sqrt(residual / sxx) if residual > 0 else 0.0
    if slope >= 0 or intercept <= 0 or (stderr > 0 and -slope / stderr < TREND_T):
        return 0.0
    return min(-slope / intercept, TREND_MAX)


def _seconds_between(regime: _Regime, p_from: float, p_to: float) -> float:
    """Seconds to go from progress p_from to p_to at the regime's pace, bent by its trend."""
    a = regime.trend
    if a <= 0:
        return (p_to - p_from) * regime.total / regime.speed

    def zone(p0: float, p1: float) -> float:  # integral of dp / (1 - a p)
        return (math.log(1 - a * p0) - math.log(1 - a * p1)) / a

    # The regime's own time fixes the scale: seconds = total / scale * zone(start, end).
    scale = regime.total * zone(regime.start_progress, regime.end_progress) / regime.seconds
    return regime.total * zone(p_from, p_to) / scale


def _time_to_finish(
    regime: _Regime,
    progress: float,
    knee: float | None,
    speedup: float = 1.0,
    knee_speedup: float | None = None,
) -> float:
    """Seconds from `progress` to 100 %; past `knee` (if ahead) `knee_speedup` times faster."""
    if knee is None:
        return _seconds_between(regime, progress, 1.0) / speedup
    return (
        _seconds_between(regime, progress, knee)
        + _seconds_between(regime, knee, 1.0) / (knee_speedup or KNEE_SPEEDUP)
    ) / speedup


def _whole_run_seconds(total: int, speed: float, knee: float | None, progress: float) -> float:
    """How long a whole run (0 to 100 %) takes at the current pace: a queued array's turn."""
    if knee is None:
        return total / speed
    before_knee_speed = speed if progress < knee else speed / KNEE_SPEEDUP
    return total * (knee + (1 - knee) / KNEE_SPEEDUP) / before_knee_speed
