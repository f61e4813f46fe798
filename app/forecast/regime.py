"""One regime of a run: a stretch in which nothing that can change md's speed changed. It measures
its own speed (a window over its later samples) and keeps the evidence for the range (how far the
pace at its earlier checkpoints missed the progress that followed). Pure; model.py keeps one."""

import math
from dataclasses import dataclass, field

# A regime is measured once it holds this many samples AND this many seconds: md's own speed is
# an average over ~30 s (10 marks x 3 s in md.c), and at low limits progress arrives in jumps.
MIN_SAMPLES = 6
MIN_SPAN_S = 20.0
# The speed is the average over this later share of the regime's samples (1.0: all of it).
WINDOW_SHARE = 0.67
# Checkpoints for the range: spread evenly over a regime's samples, at most this many.
MAX_CHECKPOINTS = 64
# Relative error prior, as log(true time / forecast time): 10 % and 90 % quantiles. Tuned on the
# training recordings only (tests/fixtures/runs README), then frozen.
PRIOR_LOW = -0.2
PRIOR_HIGH = 0.3
PRIOR_WEIGHT = 8.0
MODEL_FLOOR = 0.04  # what the model leaves out, on both sides


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
        return (last.done - start.done) / (last.ts - start.ts)

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
        return min(low, 0.0) - MODEL_FLOOR, max(high, 0.0) + MODEL_FLOOR

    def speed_at(self, trend: float, progress: float, total: int, now: float) -> float:
        """The speed now on the trend line, scaled so the regime's own time comes out right."""
        ts0, done0, _ = self.checkpoints[0]
        p0, a = done0 / total, trend
        scale = total * (math.log(1 - a * p0) - math.log(1 - a * progress)) / (a * (now - ts0))
        return scale * (1 - a * progress)


def _long_enough(start: Point, end: Point) -> bool:
    return end.count - start.count + 1 >= MIN_SAMPLES and end.ts - start.ts >= MIN_SPAN_S
