"""One regime of a run: a stretch in which nothing that can change md's speed changed. It measures
its own speed (a window over its later samples) and keeps the evidence for the range (how far the
pace at its earlier checkpoints missed the progress that followed). Pure; model.py keeps one."""

import itertools
import math
from dataclasses import dataclass, field

# A regime is measured once it holds this many samples AND this many seconds. Earlier than that
# the page shows nothing, which on a 2-minute recovery is a quarter of its rows: four samples over
# 15 s already beat finish= there, with the prior's wide range while young.
MIN_SAMPLES = 4
MIN_SPAN_S = 15.0
# Sampled coarsely (every 30 s), fewer samples do once they span this long: waiting for more
# would leave a short run without a number for a minute or more.
COARSE_SAMPLES = 2
COARSE_SPAN_S = 25.0
# The speed is the average over this later share of the regime's samples (1.0: all of it).
WINDOW_SHARE = 0.67
# Regimes measured from their first sample: the run's start, a grow's knee (nothing changed in
# md's throttle there). Any other (a knob change) keeps its guess until settled (model.py).
WAIT_FREE = frozenset({"start", "knee"})
# Checkpoints for the range: spread evenly over a regime's samples, at most this many.
MAX_CHECKPOINTS = 64
# Relative error prior, as log(true time / forecast time): 10 % and 90 % quantiles. Tuned on the
# training recordings only (tests/fixtures/runs README), then frozen.
PRIOR_LOW = -0.2
PRIOR_HIGH = 0.3
PRIOR_WEIGHT = 8.0
# The pace is fitted through the window's marks once it holds this many.
LS_POINTS = 4
MODEL_FLOOR = 0.04  # what the model leaves out, on both sides
# Bursts and jumps: the pace between checkpoints wanders by a log-spread s; the average over a
# horizon H spanning H/d such spells (d apart) wanders by s * sqrt(d / H). The range is at least
# this many of those either side (the 10 % and 90 % quantiles of a normal spread).
JITTER_Z = 1.28


@dataclass(frozen=True)
class Point:
    ts: float  # unix seconds
    done: float  # blocks
    count: int  # samples of the run before this one


@dataclass
class Regime:
    """A stretch of the run in which nothing that can change the speed changed."""

    first: Point
    kind: str  # "start", "knee", or the change that began it
    settle_speed: float | None = None  # blocks/s guessed from the change, until measured
    settle_range: tuple[float, float] = (1.0, 1.0)  # factors on settle_speed: fast, slow
    # md's 30 s average remembers the previous regime for a while: measure from here once the
    # rest is long enough (the first sample TRANSIENT_S after the change).
    settled: Point | None = None
    checkpoints: list[tuple[float, float, float]] = field(default_factory=list)  # ts, done, v
    marks: list[Point] = field(default_factory=list)  # samples spread evenly over the regime
    next_checkpoint: int = 0  # sample count at the next checkpoint

    @property
    def certain(self) -> bool:
        """The settling guess has no range: md will be held there (a max lowered under it)."""
        return self.settle_range == (1.0, 1.0)

    def window_start(
        self, last: Point | None, share: float = WINDOW_SHARE, span_s: float = 0.0
    ) -> Point | None:
        """Where the measuring window starts; None while the regime is too short to judge.
        `share` is the later share of the regime's samples it covers, `span_s` the least time
        (a few of md's steps, when progress comes in steps)."""
        if last is None or not _long_enough(self.first, last):
            return None
        start = self.first
        settled = self.settled
        if self.kind != "start" and settled is not None and _long_enough(settled, last):
            start = settled
        elif self.kind not in WAIT_FREE and self.settle_speed is not None and self.certain:
            # A max lowered under the pace: md is held at the new max, but its throttle still
            # averages over the ~30 s before the change (it stops, then jumps), so that guess
            # holds until then. An uncertain guess is measured as soon as it can be.
            return None
        # The later share of the regime: bursts count in proportion, a drift as it is now.
        since = last.count - share * (last.count - start.count)
        for mark in reversed(self.marks):
            if mark.count <= since and last.ts - mark.ts >= span_s:
                if mark.count > start.count and _long_enough(mark, last):
                    start = mark
                break
        return start

    def measure(
        self, last: Point | None, share: float = WINDOW_SHARE, span_s: float = 0.0
    ) -> float | None:
        """Blocks/s over the window up to `last`, the run's newest step (the newest sample that
        showed progress); None if too short. Marks are steps too, so a window spans whole steps
        of md's staircase: its pace is the steps' size over their period."""
        start = self.window_start(last, share, span_s)
        if start is None or last is None or last.ts <= start.ts:
            return None
        return self._pace(start, last)

    def measure_held(self, last: Point, floor: float) -> float | None:
        """Blocks/s over the window up to `last`, without its leading stretch under `floor`
        (blocks/s): a run held by its max is measured from when it got there, so a ramp up to
        the max is left out, while dips later in the window (bursts) still count."""
        start = self.window_start(last)
        if start is None:
            return None
        marks = [m for m in self.marks if start.count <= m.count <= last.count]
        for a, b in itertools.pairwise(marks):
            if b.ts > a.ts and (b.done - a.done) / (b.ts - a.ts) >= floor:
                if a.count > start.count and _long_enough(a, last):
                    start = a
                break
        return self._pace(start, last) if last.ts > start.ts else None

    def thirds(self, last: Point | None) -> tuple[float, float, float] | None:
        """The pace over the first, middle and last third (by time) of the window up to `last`,
        each from mark to mark (whole steps of md's staircase); None when the window is too
        short or has too few marks."""
        start = self.window_start(last)
        if start is None or last is None:
            return None
        marks = [start, *(m for m in self.marks if start.count < m.count < last.count), last]
        if len(marks) < 4:
            return None
        span = last.ts - start.ts
        cut1 = min(marks, key=lambda m: abs(m.ts - (start.ts + span / 3)))
        cut2 = min(marks, key=lambda m: abs(m.ts - (start.ts + 2 * span / 3)))
        if not start.ts < cut1.ts < cut2.ts < last.ts:
            return None
        return (
            (cut1.done - start.done) / (cut1.ts - start.ts),
            (cut2.done - cut1.done) / (cut2.ts - cut1.ts),
            (last.done - cut2.done) / (last.ts - cut2.ts),
        )

    def spell_quantile(self, last: Point | None, q: float) -> float | None:
        """The time-weighted `q` quantile of the pace between the window's checkpoints: with
        q near 1, the pace the run keeps when nothing else uses its disks (bursts, a busy host)."""
        start = self.window_start(last)
        if start is None or last is None:
            return None
        cps = [c for c in self.checkpoints if start.ts <= c[0] <= last.ts]
        spells = sorted(
            ((d1 - d0) / (t1 - t0), t1 - t0)
            for (t0, d0, _), (t1, d1, _) in itertools.pairwise(cps)
            if t1 > t0
        )
        if len(spells) < 3:
            return None
        total = sum(dt for _, dt in spells)
        acc = 0.0
        for v, dt in spells:
            acc += dt
            if acc >= q * total:
                return v
        return spells[-1][0]

    def _pace(self, start: Point, last: Point) -> float:
        """Blocks/s from `start` to `last`: the least-squares slope through them and the marks
        between. md's position lags its true place by anything up to a window, more at one end
        than the other by chance; fitted through every step of the window, the lags average out
        instead of tilting the pace (on a smooth run it is the plain average pace)."""
        points = [start, *(m for m in self.marks if start.count < m.count < last.count), last]
        if len(points) < LS_POINTS:
            return (last.done - start.done) / (last.ts - start.ts)
        n = len(points)
        mean_t = sum(p.ts for p in points) / n
        mean_d = sum(p.done for p in points) / n
        sxx = sum((p.ts - mean_t) ** 2 for p in points)
        sxy = sum((p.ts - mean_t) * (p.done - mean_d) for p in points)
        return sxy / sxx if sxx > 0 else (last.done - start.done) / (last.ts - start.ts)

    def checkpoint(self, last: Point) -> None:
        """Remember the pace now, to judge later how far it missed (the range's evidence)."""
        if last.count < self.next_checkpoint:
            return
        self.marks.append(last)
        if len(self.marks) > MAX_CHECKPOINTS:
            self.marks = self.marks[::2]
        step = max(1, (last.count - self.first.count) // (MAX_CHECKPOINTS // 2))
        self.next_checkpoint = last.count + step
        speed = self.measure(last)
        if speed is None or speed <= 0:
            return
        self.checkpoints.append((last.ts, last.done, speed))
        if len(self.checkpoints) > MAX_CHECKPOINTS:
            self.checkpoints = self.checkpoints[::2]

    def error_quantiles(self, last: Point, remaining_s: float) -> tuple[float, float]:
        """10 % and 90 % quantiles of log(true time / forecast time) for this regime, from the
        errors of its earlier checkpoints over horizons like the one ahead, blended with the
        prior while there are few."""
        now, done_now = last.ts, last.done
        judged: list[tuple[float, float]] = []  # (horizon s, log error)
        for ts, done, speed in self.checkpoints:
            horizon = now - ts
            if horizon >= MIN_SPAN_S and done_now > done:
                judged.append((horizon, math.log(horizon * speed / (done_now - done))))
        if judged:
            keep = min(remaining_s, max(h for h, _ in judged)) / 2
            judged = [j for j in judged if j[0] >= keep] or judged
        errors = [e for _, e in judged]
        n = len(errors)
        low, high = PRIOR_LOW, PRIOR_HIGH
        if n:
            errors.sort()
            emp_low = errors[int(0.1 * (n - 1))]
            emp_high = errors[math.ceil(0.9 * (n - 1))]
            low = (n * emp_low + PRIOR_WEIGHT * PRIOR_LOW) / (n + PRIOR_WEIGHT)
            high = (n * emp_high + PRIOR_WEIGHT * PRIOR_HIGH) / (n + PRIOR_WEIGHT)
        jitter = JITTER_Z * self.jitter(remaining_s)
        low, high = min(low, -jitter), max(high, jitter)
        return min(low, 0.0) - MODEL_FLOOR, max(high, 0.0) + MODEL_FLOOR

    def jitter(self, horizon_s: float) -> float:
        """How far (log) the average pace over the next `horizon_s` may wander, judged from how
        the pace between this regime's checkpoints wandered (bursts of other I/O, md's jumps)."""
        spells = [
            (t1 - t0, (d1 - d0) / (t1 - t0))
            for (t0, d0, _), (t1, d1, _) in itertools.pairwise(self.checkpoints)
            if t1 > t0 and d1 > d0
        ]
        if len(spells) < 3 or horizon_s <= 0:
            return 0.0
        span = sum(dt for dt, _ in spells)
        mean = sum(dt * math.log(v) for dt, v in spells) / span
        spread = math.sqrt(sum(dt * (math.log(v) - mean) ** 2 for dt, v in spells) / span)
        spacing = span / len(spells)
        return spread * math.sqrt(min(1.0, spacing / horizon_s))

    def speed_at(self, trend: float, progress: float, total: int, now: float) -> float:
        """The speed now on the trend line, scaled so the regime's own time comes out right."""
        ts0, done0, _ = self.checkpoints[0]
        p0, a = done0 / total, trend
        scale = total * (math.log(1 - a * p0) - math.log(1 - a * progress)) / (a * (now - ts0))
        return scale * (1 - a * progress)


def _long_enough(start: Point, end: Point) -> bool:
    samples, span = end.count - start.count + 1, end.ts - start.ts
    if samples >= COARSE_SAMPLES and span >= COARSE_SPAN_S:
        return True
    return samples >= MIN_SAMPLES and span >= MIN_SPAN_S
