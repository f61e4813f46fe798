"""Tuning must never leave a sync slower than it found it: once an apply has settled, its pace is
compared with the pace before it in like conditions, and a preset found slower beyond the
comparison's own noise is put back by the policy.

Like conditions: the same operation of the same run, the same side of a grow's knee (past it a
grow only writes and may run several times faster), and the same other-I/O state (md falls to
its min limit while the array's users read or write it). Each window is cut into spans and a
pace is taken over each; the noise is two standard errors of the difference of the means, so
md's progress arriving in jumps, or a host that stole the CPU for a while, widens the band
rather than deciding the verdict. A pace known only from less than MIN_SPANS spans per side
decides nothing. An apply pressed as the sync began has no before-window: the policy then puts
the originals back for a window to measure the pace without it (before_unknown). The
before-window lives in memory: after a restart an apply made before it is not judged.
"""

import collections
import math
import statistics
from dataclasses import dataclass

from app.diagnosis.rules import competing_io
from app.forecast.physics import grow_knee
from app.live.tick import Tick
from app.store.effects import SETTLE_S
from app.store.slower import Applied

SPANS_PER_WINDOW = 6
MIN_SPANS = 3
Z = 2.0  # standard errors: a one-sided 98 % band
MIN_LOSS = 0.05  # and at least 5 % slower: a loss the owner would notice


@dataclass(frozen=True)
class PacePoint:
    """One tick's reading of one array's sync."""

    ts: float  # unix seconds (the app's clock)
    done_blocks: int  # 1 KiB blocks
    past_knee: bool
    other_io: bool  # the diagnosis found other I/O competing with the sync this tick
    md_thread: tuple[str, float] | None  # the busiest md thread and the cores it used


@dataclass(frozen=True)
class Comparison:
    """The pace before an apply and after it, in one other-I/O state."""

    before_kb_s: float  # KiB/s, mean of the spans
    after_kb_s: float
    noise_kb_s: float  # two standard errors of after - before
    other_io: bool
    spans: tuple[int, int]  # spans before, after

    @property
    def slower(self) -> bool:
        loss = self.before_kb_s - self.after_kb_s
        return loss > self.noise_kb_s and loss > MIN_LOSS * self.before_kb_s

    @property
    def ratio(self) -> float:
        return self.after_kb_s / self.before_kb_s if self.before_kb_s > 0 else math.inf


def span_paces(points: list[PacePoint], span_s: float) -> list[tuple[float, bool]]:
    """KiB/s over consecutive spans of at least `span_s`, each with its other-I/O state; a span
    whose ticks disagree on it is left out (it mixes the two conditions)."""
    paces: list[tuple[float, bool]] = []
    start = 0
    for end in range(1, len(points)):
        first, last = points[start], points[end]
        if last.ts - first.ts < span_s:
            continue
        states = {p.other_io for p in points[start + 1 : end + 1]}
        if len(states) == 1:
            pace = (last.done_blocks - first.done_blocks) / (last.ts - first.ts)
            paces.append((pace, states.pop()))
        start = end
    return paces


def compare(before: list[PacePoint], after: list[PacePoint], span_s: float) -> Comparison | None:
    """Before against after in the other-I/O state both windows have most spans of (quiet
    first on a tie); None when neither has MIN_SPANS spans on both sides."""
    spans_before, spans_after = span_paces(before, span_s), span_paces(after, span_s)
    best: Comparison | None = None
    for other_io in (False, True):
        b = [pace for pace, state in spans_before if state == other_io]
        a = [pace for pace, state in spans_after if state == other_io]
        if len(b) < MIN_SPANS or len(a) < MIN_SPANS:
            continue
        noise = Z * math.sqrt(statistics.variance(b) / len(b) + statistics.variance(a) / len(a))
        found = Comparison(
            statistics.fmean(b), statistics.fmean(a), noise, other_io, (len(b), len(a))
        )
        if best is None or min(found.spans) > min(best.spans):
            best = found
    return best


@dataclass
class _Trace:
    action: str
    total_blocks: int
    points: collections.deque[PacePoint]


class NeverSlower:
    """Keeps each running sync's recent pace from the ticks, and judges an apply once its
    after-window is over."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.traces: dict[str, _Trace] = {}
        self.judged: set[tuple[int, str]] = set()

    def observe(self, tick: Tick) -> None:
        """Add this tick's progress of every running sync (from the tick's readings)."""
        if tick.parsed is None or tick.ts is None:
            return
        if tick.clock_step:
            self.shift(tick.clock_step)
        keep_s = 2 * self.window_s + SETTLE_S + 60.0
        running = set()
        for array in tick.parsed.arrays:
            sync = array.sync
            if not array.syncing or sync is None or sync.done_blocks is None:
                continue
            running.add(array.name)
            total = sync.total_blocks or 0
            trace = self.traces.get(array.name)
            if (
                trace is None
                or trace.action != sync.action
                or trace.total_blocks != total
                or (trace.points and sync.done_blocks < trace.points[-1].done_blocks)
            ):
                trace = self.traces[array.name] = _Trace(sync.action, total, collections.deque())
            sysfs = tick.sysfs.get(array.name)
            knee = grow_knee(array.level, sysfs.raid_disks if sysfs else None)
            diagnosis = tick.diagnoses.get(array.name)
            observation = diagnosis.observation if diagnosis is not None else None
            threads = observation.threads_cpu if observation is not None else {}
            trace.points.append(
                PacePoint(
                    tick.ts,
                    sync.done_blocks,
                    knee is not None and total > 0 and sync.done_blocks >= knee * total,
                    observation is not None and competing_io(observation) is not None,
                    max(threads.items(), key=lambda item: item[1]) if threads else None,
                )
            )
            while trace.points and trace.points[0].ts < tick.ts - keep_s:
                trace.points.popleft()
        for gone in set(self.traces) - running:
            del self.traces[gone]

    def due(self, applied: Applied, now: float) -> bool:
        """The apply's after-window is over and it has not been judged yet."""
        key = (applied.op_id, applied.array)
        return key not in self.judged and now >= applied.applied_at + SETTLE_S + self.window_s

    def before_unknown(self, applied: Applied) -> bool:
        """The sync ran on through the apply's after-window, but less than MIN_SPANS spans of it
        were seen before the apply (it was pressed as the sync began): its pace before is not
        known, and only a window without the apply can tell it."""
        trace = self.traces.get(applied.array)
        if trace is None:
            return False
        at, span_s = applied.applied_at, self.window_s / SPANS_PER_WINDOW
        before = [p for p in trace.points if at - self.window_s <= p.ts <= at]
        after = [p for p in trace.points if at + SETTLE_S <= p.ts <= at + SETTLE_S + self.window_s]
        return len(span_paces(before, span_s)) < MIN_SPANS <= len(span_paces(after, span_s))

    def judge(self, applied: Applied) -> tuple[Comparison, PacePoint] | None:
        """The comparison for one array of an apply that is due, with the last point it used;
        None when the pace is not known well enough on both sides. Judged once either way."""
        self.judged.add((applied.op_id, applied.array))
        trace = self.traces.get(applied.array)
        if trace is None:
            return None
        at = applied.applied_at
        before = [p for p in trace.points if at - self.window_s <= p.ts <= at]
        after = [p for p in trace.points if at + SETTLE_S <= p.ts <= at + SETTLE_S + self.window_s]
        if not before or not after:
            return None
        # Compare on the side of the knee the apply found: past it the pace is another one.
        side = before[-1].past_knee
        before = [p for p in before if p.past_knee == side]
        after = [p for p in after if p.past_knee == side]
        found = compare(before, after, self.window_s / SPANS_PER_WINDOW)
        return (found, after[-1]) if found is not None and after else None

    def shift(self, delta: float) -> None:
        """The wall clock stepped: every kept time moves with it."""
        for trace in self.traces.values():
            trace.points = collections.deque(_moved(p, delta) for p in trace.points)


def _moved(point: PacePoint, delta: float) -> PacePoint:
    return PacePoint(
        point.ts + delta, point.done_blocks, point.past_knee, point.other_io, point.md_thread
    )
