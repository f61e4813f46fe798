"""The measuring half of auto-tune, pure: which settings to try, in what order, when a step has
measured enough, and which setting to keep.

The stripe cache is swept as a ladder that only climbs: the value found, then each larger
candidate, never back down. Since Linux 4.1 stripe_cache_size is a floor (conf->min_nr_stripes,
drivers/md/raid5.c): raising it allocates the stripes at once, but lowering it frees only the
stripes idle at that moment (raid5_set_cache_size stops at the first hash bucket with none free),
so during a busy sync the cache stays large and a step down measures the larger cache it left
behind; the surplus goes back only when the kernel's shrinker asks for memory or the array stops.
Each ladder step is therefore measured on its own, as long as the noise needs.

Read-ahead moves both ways at once, so its phase returns to a reference between candidates:
reference, candidate, reference, ... Each candidate's speed is taken over the mean of the
references either side of it, so a slow drift (inner tracks, other I/O coming and going) cancels
out; and its first reference, measured with the stripe cache the ladder ended on, re-checks the
ladder's last step: when the two disagree the load moved during the ladder, and the sweep says so.

Read-ahead serves only the array's users: md's sync reads its members directly. When nothing read
the array during the ladder its phase is skipped (runner.py) and the value found kept.

Scores are shares of the best; the setting kept is the smallest within WITHIN_BEST of it: more
stripe cache costs RAM for nothing when it buys less than the noise (seeds: 16384 fastest, 32768
slower).

A sweep is worth its cost only when what it keeps runs long afterwards. Its steps are shortened
(fit_steps) when the configured lengths would not end within SWEEP_SHARE of the time the sync has
left before a grow's knee (or its end): a sweep that ends past the knee measured the reads for a
run that only writes from there (on 2 GiB disks it ended at 68 %). The time left
is first md's `speed=`, which early in a grow can be far off (5.10: 506 s to a knee 90 s away,
so that sweep ended at 62 % of the grow); once the sweep has measured a pace of its own
(paced_left_s), the steps are fitted again on that.
"""

import itertools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

# Stripe cache entries tried above the value found. Each rung costs a step of a minute or so on a
# real sync (its progress comes in bursts), and a rung once reached stays for the rest of a busy
# sync (the floor: on the real kernel, writing a lower value after 32768 freed none of its
# 512 MiB). So the ladder ends at 16384, the seeds' best and boost's (its AUTO_STRIPE_CACHE_MAX):
# 32768 was slower there and on the real kernel (0.94 of 16384's speed, 2 GiB HDD-like disks).
# 1024 is tried only where 4096 does not fit in RAM: elsewhere it is never near the best (real
# kernel: 1.06x of 256 where 16384 gave 1.40x).
STRIPE_CACHE_LADDER = (4096, 16384)
STRIPE_CACHE_SMALL = 1024
# Read-ahead of the md device, KiB (seeds: 192 KiB -> 32 MiB "helped a little").
READ_AHEAD_LADDER = (4096, 32768)
WITHIN_BEST = 0.95
NOISE = 0.03  # a step may end early once the standard error of its speed is under this share
MIN_POINTS = 3  # ticks in a measured span, at least
BLOCKS = 4  # a step's window is also judged by the spread of its quarters' speeds
AT_MIN = 0.10  # a speed this close to the min limit is md holding the sync there for other I/O
HOLD_STEPS = 10  # ... and is measured again for up to this many longest steps
HELD = "held at the minimum limit by other I/O"
REFERENCE_AGREES = 0.10  # two measurements of one setting may differ this much (share)
MAX_RETRIES = 2  # times a candidate is measured again when its references differ more
# In a ladder: the box's own I/O on the array moving by more than this share of the sync's
# speed between two steps means the load changed under the ladder: the step is measured again.
OWN_IO_MOVES = 0.10


# The share of the time left (to a grow's knee, else to the sync's end) a sweep may take.
SWEEP_SHARE = 0.4


@dataclass(frozen=True)
class StepTimes:
    """A step's lengths, s: the wait after a write, and the least and most it measures."""

    settle_s: float
    min_s: float
    max_s: float

    def said(self) -> str:
        return f"{self.settle_s:.0f} s settle and {self.min_s:.0f}-{self.max_s:.0f} s measure"


def fit_steps(times: StepTimes, steps: int, left_s: float | None, tick_s: float) -> StepTimes:
    """Step lengths for `steps` steps to end within SWEEP_SHARE of `left_s`: the configured ones
    when they do (or the time left is unknown), else each shortened in proportion, never under
    what a measurement needs: a tick to settle, MIN_POINTS + 1 ticks to measure, twice that at
    most."""
    planned = steps * (times.settle_s + times.max_s)
    if left_s is None or planned <= SWEEP_SHARE * left_s:
        return times
    scale = SWEEP_SHARE * left_s / planned
    min_s = min(times.min_s, max(times.min_s * scale, (MIN_POINTS + 1) * tick_s))
    return StepTimes(
        settle_s=min(times.settle_s, max(times.settle_s * scale, tick_s)),
        min_s=min_s,
        max_s=min(times.max_s, max(times.max_s * scale, 2 * min_s)),
    )


def time_left_s(
    done: int | None, total: int | None, speed: float | None, knee: float | None
) -> float | None:
    """Seconds until a sync reaches its knee (a share of `total`), else its end, at `speed` (KiB/s,
    blocks of 1 KiB); None when unknown or already past."""
    if done is None or not total or not speed or speed <= 0:
        return None
    end = knee * total if knee is not None and done < knee * total else total
    return (end - done) / speed if end > done else None


def paced_left_s(
    began: tuple[float, int],
    now: tuple[float, int],
    total: int | None,
    knee: float | None,
    least_s: float,
) -> float | None:
    """Seconds from the sweep's start (`began`: unix s, done 1 KiB blocks) to a grow's knee
    (else the end) at the pace measured since then (`now`); None until `least_s` has passed or
    while nothing moved. The same question time_left_s asks md's `speed=`, answered by the
    sweep's own readings."""
    (t0, done0), (t1, done1) = began, now
    if t1 - t0 < least_s or done1 <= done0:
        return None
    return time_left_s(done0, total, (done1 - done0) / (t1 - t0), knee)


@dataclass(frozen=True)
class Phase:
    knob: str  # stripe_cache_size | read_ahead_kb
    reference: int  # the value found: measured first
    candidates: tuple[int, ...]  # in measuring order, the reference not among them
    climbs: bool = False  # a ladder (never back down) rather than a return to the reference

    def steps(self) -> list[tuple[int, str]]:
        """(value, role) in order: S c1 c2 ... cn for a ladder (S: its start, the value found),
        else R c1 R c2 ... cn R."""
        order: list[tuple[int, str]] = [(self.reference, "start" if self.climbs else "reference")]
        for candidate in self.candidates:
            order.append((candidate, "candidate"))
            if not self.climbs:
                order.append((self.reference, "reference"))
        return order

    def to_json(self) -> dict[str, object]:
        return {
            "knob": self.knob,
            "reference": self.reference,
            "candidates": list(self.candidates),
            "climbs": self.climbs,
        }


def stripe_cache_phase(start: int, floor: int | None, fits: Callable[[int], bool]) -> Phase:
    """The value found, then the ladder's larger values above md's floor and within the RAM
    budget (`fits`), ascending: a ladder that never steps down (see the module's docstring)."""
    rungs = STRIPE_CACHE_LADDER if fits(STRIPE_CACHE_LADDER[0]) else (STRIPE_CACHE_SMALL,)
    above = sorted(v for v in rungs if v > start and v >= (floor or 17) and fits(v))
    return Phase("stripe_cache_size", start, tuple(above), climbs=True)


def read_ahead_phase(start: int) -> Phase:
    """The value found is the reference; the ladder's larger values are the candidates."""
    return Phase("read_ahead_kb", start, tuple(v for v in READ_AHEAD_LADDER if v > start))


@dataclass
class Window:
    """One step's measurement: ticks after the settle time, until enough progress is seen."""

    written: float  # unix seconds the step's value took effect
    settle_s: float
    min_s: float
    max_s: float

    def said(self) -> str:
        return f"{self.settle_s:.0f} s settle and {self.min_s:.0f}-{self.max_s:.0f} s measure"

    points: list[tuple[float, int]] = field(default_factory=list)  # (ts, done 1 KiB blocks)

    def add(self, ts: float, done: int) -> None:
        if ts >= self.written + self.settle_s:
            self.points.append((ts, done))

    @property
    def span_s(self) -> float:
        return self.points[-1][0] - self.points[0][0] if self.points else 0.0

    def _fit(self) -> tuple[float, float] | None:
        """Least-squares slope of progress over time (KiB/s) and its standard error. A fit, not
        the two end points: md's progress arrives in jumps (at low limits most 1 s samples show
        none), and a line through every point is not thrown by where a jump falls."""
        if len(self.points) < 2 or self.span_s <= 0:
            return None
        times = [t for t, _ in self.points]
        mean_t = statistics.fmean(times)
        mean_d = statistics.fmean(d for _, d in self.points)
        spread = sum((t - mean_t) ** 2 for t in times)
        slope = sum((t - mean_t) * (d - mean_d) for t, d in self.points) / spread
        if len(self.points) < 3:
            return slope, math.inf
        residual = sum((d - mean_d - slope * (t - mean_t)) ** 2 for t, d in self.points)
        return slope, math.sqrt(residual / (len(self.points) - 2) / spread)

    @property
    def speed_kb_s(self) -> float | None:
        fit = self._fit()
        return max(fit[0], 0.0) if fit else None

    def noise(self) -> float:
        """The speed's standard error as a share of it (inf until it can be told): the line's,
        or, when larger, the spread of the speeds of the window's quarters. The line's alone
        assumes each tick's error stands alone; on the real kernel a big stripe cache makes
        progress come in bursts and stalls of ~10 s (8 s steps read 1 to 11 MB/s at one
        setting), and only the quarters see that."""
        fit = self._fit()
        if fit is None or fit[0] <= 0:
            return math.inf
        quarters = self._block_speeds(BLOCKS)
        if len(quarters) < BLOCKS:
            return math.inf
        spread = statistics.stdev(quarters) / math.sqrt(BLOCKS) / fit[0]
        return max(fit[1] / fit[0], spread)

    def _block_speeds(self, blocks: int) -> list[float]:
        """The speed over each of `blocks` equal spans of the window, between the ticks nearest
        their edges (fewer when two edges fall on one tick)."""
        start, span = self.points[0][0], self.span_s
        edges = [
            min(self.points, key=lambda p: abs(p[0] - (start + span * i / blocks)))
            for i in range(blocks + 1)
        ]
        return [
            (d1 - d0) / (t1 - t0) for (t0, d0), (t1, d1) in itertools.pairwise(edges) if t1 > t0
        ]

    def complete(self) -> bool:
        if len(self.points) < MIN_POINTS or self.span_s < self.min_s:
            return False
        return self.span_s >= self.max_s or self.noise() <= NOISE


def held_at_min(speed_kb_s: float, speed_min: float | None) -> bool:
    """Whether a step's speed sits at the min limit, where md holds a sync while other I/O runs
    (on a disk-bound array that runs below its min, md is not throttling: False)."""
    if not speed_min:
        return False
    return abs(speed_kb_s / speed_min - 1) <= AT_MIN


@dataclass(frozen=True)
class MeasuredStep:
    """One counted step of a sweep: the value tried, its role, the speed it gave."""

    value: int
    role: str
    speed_kb_s: float


def reference_moved(measured: list[MeasuredStep]) -> float | None:
    """When the last three steps are reference, candidate, reference and the two references
    differ by more than REFERENCE_AGREES: by how much (a share of their mean); else None."""
    if len(measured) < 3:
        return None
    before, candidate, after = measured[-3:]
    if (before.role, candidate.role, after.role) != ("reference", "candidate", "reference"):
        return None
    return moved(before.speed_kb_s, after.speed_kb_s)


def moved(before: float, after: float) -> float | None:
    """How far apart two measurements of one setting are (a share of their mean), when more than
    REFERENCE_AGREES; else None."""
    mean = (before + after) / 2
    if mean <= 0:
        return None
    apart = abs(after - before) / mean
    return apart if apart > REFERENCE_AGREES else None


def scores(measured: list[MeasuredStep], climbs: bool) -> dict[int, float]:
    """Each value's speed as a share of the best value's (the best: 1.0). In a ladder a step
    counts as measured; around a reference, as its speed over the references either side of it.
    A value measured twice gets the mean."""
    found: dict[int, list[float]] = {}
    for i, step in enumerate(measured):
        if climbs:
            found.setdefault(step.value, []).append(step.speed_kb_s)
            continue
        if step.role == "reference":
            found.setdefault(step.value, []).append(1.0)
            continue
        around = [
            m.speed_kb_s
            for m in (_nearest(measured, i, -1), _nearest(measured, i, 1))
            if m is not None and m.speed_kb_s > 0
        ]
        if around:
            found.setdefault(step.value, []).append(step.speed_kb_s / statistics.fmean(around))
    means = {value: statistics.fmean(s) for value, s in found.items()}
    best = max(means.values(), default=0.0)
    return {value: (mean / best if best > 0 else 0.0) for value, mean in means.items()}


def _nearest(measured: list[MeasuredStep], i: int, direction: int) -> MeasuredStep | None:
    j = i + direction
    while 0 <= j < len(measured):
        if measured[j].role == "reference":
            return measured[j]
        j += direction
    return None


def choose(scored: dict[int, float]) -> int:
    """The smallest value within WITHIN_BEST of the best score."""
    best = max(scored.values())
    return min(v for v, s in scored.items() if s >= WITHIN_BEST * best)
