"""The auto-tune sweep in memory, pure: where it stands, what its phase has counted, and what
the steps measured say about drift (its row and steps are in SQLite: record.py)."""

from dataclasses import dataclass, field

from app.shapes.tuning import SweepStepNow
from app.tuning.autotune import sweep
from app.tuning.autotune.guard import ArrayReads, OwnIo, OwnOps
from app.tuning.autotune.record import setting_label


@dataclass
class Running:
    """The sweep being measured, in memory; its row and steps are in SQLite."""

    id: int
    array: str
    action: str
    start_values: dict[str, int]
    phases: list[sweep.Phase]
    knee: float | None
    ops: OwnOps
    before_knee: bool  # a grow not yet past its knee: passing it invalidates what came before
    times: sweep.StepTimes  # each step's lengths, fitted to the time the sync has left
    began: tuple[float, int] | None  # unix s, done 1 KiB blocks at the sweep's first progress
    steps_planned: int  # the steps `times` were fitted for
    fitted_at_start: sweep.StepTimes  # `times` as fitted on md's speed= when the sweep began
    md_left_s: float | None  # the time left md's speed= gave then, s
    phase: int = 0
    queue: list[int] = field(default_factory=list)  # candidates of this phase still to measure
    role: str = "reference"
    value: int = 0  # the value of the phase's knob held in this step
    window: sweep.Window | None = None
    measured: list[sweep.MeasuredStep] = field(default_factory=list)  # this phase's counted steps
    counted: list[int] = field(default_factory=list)  # their seq numbers in autotune_steps
    chosen: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    session_id: int | None = None
    io: OwnIo = field(default_factory=OwnIo)
    reads: ArrayReads = field(default_factory=ArrayReads)  # the array's users' reads, whole sweep
    held_since: float | None = None  # this step has been held at the min limit since then
    retries: dict[int, int] = field(default_factory=dict)  # value -> times measured again
    ladder_top: sweep.MeasuredStep | None = None  # the climb's last step, re-checked after it
    own_kb_s: float | None = None  # the box's own I/O on the array in the last counted step
    remarks: list[str] = field(default_factory=list)  # said with the result
    fit_said: str | None = None  # among the remarks: how the steps were last fitted, and why
    start_said: str | None = None  # ... as said when the sweep began

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s: the step's measurement keeps its
        monotonic span."""
        if self.window is not None:
            self.window.written += delta
            self.window.points = [(ts + delta, done) for ts, done in self.window.points]
        if self.held_since is not None:
            self.held_since += delta
        if self.began is not None:
            self.began = (self.began[0] + delta, self.began[1])
        self.io.shift(delta)
        self.reads.shift(delta)

    def say_fit(self, said: str | None) -> None:
        """The one remark on the steps' lengths, replaced as they are fitted again (None: the
        configured lengths, nothing to say)."""
        if self.fit_said in self.remarks:
            self.remarks.remove(self.fit_said)
        if said is not None:
            self.remarks.insert(0, said)
        self.fit_said = said

    def step_now(self, now: float) -> SweepStepNow | None:
        """The step being measured, as the page shows it, with how far the sweep has come; None
        between the last phase's end and the sweep's (a request reads this without the lock
        the tick holds)."""
        window = self.window
        if self.phase >= len(self.phases) or window is None:
            return None
        knob = self.phases[self.phase].knob
        label = setting_label(knob, self.value)
        step = self.seq + 1
        steps = max(self.steps_planned, step)
        this_left = max(window.written + window.settle_s + window.max_s - now, 0.0)
        each = self.times.settle_s + self.times.max_s
        return SweepStepNow(
            knob=knob,
            label=label,
            value=self.value,
            role=self.role,
            step=step,
            steps=steps,
            left_s=this_left + (steps - step) * each,
        )

    def forget_counted(self) -> list[int]:
        """Start the phase's comparison afresh (the steps before say nothing about those after):
        the seq numbers of the steps no longer counted."""
        seqs = self.counted
        self.measured, self.counted, self.retries, self.own_kb_s = [], [], {}, None
        return seqs

    def load_changed(self, own_kb_s: float | None, speed: float) -> str | None:
        """In a ladder, which cannot return to a reference: whether the box's own I/O on the
        array moved since the last counted step by more than sweep.OWN_IO_MOVES of the sync's
        speed (a reader came or went); in words, or None."""
        if self.own_kb_s is None or own_kb_s is None:
            return None
        if abs(own_kb_s - self.own_kb_s) <= sweep.OWN_IO_MOVES * max(speed, 1.0):
            return None
        return (
            f"the box's own I/O on {self.array} moved from {self.own_kb_s / 1024:.1f} to "
            f"{own_kb_s / 1024:.1f} MiB/s"
        )

    def ladder_ended(self, chosen: int) -> sweep.MeasuredStep:
        """The ladder's last step, re-checked after it. Keeping less than the ladder reached
        frees no stripes while the sync keeps them busy (the value is a floor): say so."""
        if chosen < self.value:
            self.remarks.append(
                f"md keeps the stripes of stripe cache {self.value} until this sync leaves them "
                "idle (since Linux 4.1 the value is a floor)"
            )
        return self.measured[-1]

    def passed_the_knee(self, done_blocks: int, total_blocks: int | None) -> bool:
        """True once, on the tick a grow passes its knee (from there it only writes)."""
        if not self.before_knee or self.knee is None:
            return False
        if done_blocks < self.knee * (total_blocks or 0):
            return False
        self.before_knee = False
        return True

    def recheck(self, speed: float) -> list[str]:
        """The first reference after the ladder runs with the cache the ladder ended on: when it
        disagrees with the ladder's last step, the load moved while the ladder climbed."""
        top, self.ladder_top = self.ladder_top, None
        assert top is not None
        apart = sweep.moved(top.speed_kb_s, speed)
        if apart is None:
            return []
        said = (
            f"the speed moved {apart:.0%} since {setting_label('stripe_cache_size', top.value)} "
            "was measured: the load changed while the ladder climbed, so its choice is less sure"
        )
        self.remarks.append(said)
        return [said]

    def measure_again_if_the_reference_moved(self) -> tuple[int, str] | None:
        """The references either side of a candidate disagree: the load changed while it was
        measured. Queue it again between this reference and the next one; the step no longer
        counted and why, or None."""
        apart = sweep.reference_moved(self.measured)
        if apart is None or self.retries.get(self.measured[-2].value, 0) >= sweep.MAX_RETRIES:
            return None
        candidate = self.measured.pop(-2)
        seq = self.counted.pop(-2)
        self.retries[candidate.value] = self.retries.get(candidate.value, 0) + 1
        self.queue.insert(0, candidate.value)
        return seq, f"not counted: the reference moved {apart:.0%} around it"
