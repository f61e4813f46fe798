"""The measuring half of auto-tune, pure: which settings to try, in what order, when a step has
measured enough, and which setting to keep.

A phase sweeps one knob: reference, candidate, reference, candidate, ..., reference. Each
candidate's score is its speed over the mean speed of the reference steps either side of it, so
a slow drift (inner tracks, other I/O coming and going) cancels out. The setting kept is the
smallest whose score is within WITHIN_BEST of the best: more stripe cache costs RAM for nothing
when it buys less than the noise (seeds: 16384 fastest, 32768 slower).
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

# Stripe cache entries tried (powers of four, up to the kernel's maximum) and the reference the
# sweep returns to between them: the value boost would pick (plan.AUTO_STRIPE_CACHE_MAX), so the
# time spent measuring runs mostly at a good speed.
STRIPE_CACHE_LADDER = (256, 1024, 4096, 16384, 32768)
STRIPE_CACHE_REFERENCE = 16384
# Read-ahead of the md device, KiB (seeds: 192 KiB -> 32 MiB "helped a little").
READ_AHEAD_LADDER = (4096, 32768)
WITHIN_BEST = 0.95
NOISE = 0.03  # a step may end early once the standard error of its speed is under this share
MIN_POINTS = 3  # ticks in a measured span, at least
AT_MIN = 0.10  # a speed this close to the min limit is md holding the sync there for other I/O
HOLD_STEPS = 10  # ... and is measured again for up to this many longest steps
HELD = "held at the minimum limit by other I/O"
REFERENCE_AGREES = 0.10  # the references around a candidate may differ this much (share)
MAX_RETRIES = 2  # times a candidate is measured again when they differ more


@dataclass(frozen=True)
class Phase:
    knob: str  # stripe_cache_size | read_ahead_kb
    reference: int
    candidates: tuple[int, ...]  # in measuring order, the reference not among them

    def steps(self) -> list[tuple[int, str]]:
        """(value, role) in order: R c1 R c2 ... cn R."""
        order: list[tuple[int, str]] = [(self.reference, "reference")]
        for candidate in self.candidates:
            order += [(candidate, "candidate"), (self.reference, "reference")]
        return order

    def to_json(self) -> dict[str, object]:
        return {
            "knob": self.knob,
            "reference": self.reference,
            "candidates": list(self.candidates),
        }


def stripe_cache_phase(start: int, floor: int | None, fits: Callable[[int], bool]) -> Phase:
    """Candidates from the ladder and the value found, above md's floor and within the RAM
    budget (`fits`); the reference is the largest of them up to STRIPE_CACHE_REFERENCE."""
    values = {v for v in (*STRIPE_CACHE_LADDER, start) if v >= (floor or 17) and fits(v)}
    values.add(start)  # what is there already always counts: it costs nothing new
    ordered = sorted(values)
    reference = max((v for v in ordered if v <= STRIPE_CACHE_REFERENCE), default=ordered[0])
    return Phase("stripe_cache_size", reference, tuple(v for v in ordered if v != reference))


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
        none, DESIGN.md), and a line through every point is not thrown by where a jump falls."""
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
        """The speed's standard error as a share of it (inf until it can be told)."""
        fit = self._fit()
        if fit is None or fit[0] <= 0:
            return math.inf
        return fit[1] / fit[0]

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
class Measured:
    value: int
    role: str
    speed_kb_s: float


def reference_moved(measured: list[Measured]) -> float | None:
    """When the last three steps are reference, candidate, reference and the two references
    differ by more than REFERENCE_AGREES: by how much (a share of their mean); else None."""
    if len(measured) < 3:
        return None
    before, candidate, after = measured[-3:]
    if (before.role, candidate.role, after.role) != ("reference", "candidate", "reference"):
        return None
    mean = (before.speed_kb_s + after.speed_kb_s) / 2
    if mean <= 0:
        return None
    moved = abs(after.speed_kb_s - before.speed_kb_s) / mean
    return moved if moved > REFERENCE_AGREES else None


def scores(measured: list[Measured]) -> dict[int, float]:
    """Each value's speed relative to the reference steps around it (the reference: 1.0); a
    candidate measured twice gets the mean of its scores."""
    found: dict[int, list[float]] = {}
    for i, step in enumerate(measured):
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
    return {value: statistics.fmean(s) for value, s in found.items()}


def _nearest(measured: list[Measured], i: int, direction: int) -> Measured | None:
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
