"""What the event detector is given each tick (arrays, ended runs, the open boost, drift), its
rules, and the events it gives back (pure data)."""

from dataclasses import asdict, dataclass, field
from typing import Any

State = dict[str, Any]  # the detector's memory between ticks, saved as JSON with the outbox


@dataclass(frozen=True)
class EventRules:
    milestone_percent: float = 25.0
    stall_s: float = 600.0
    mismatch_threshold: int = 0
    sampler_failures: int = 3


@dataclass(frozen=True)
class ArrayFacts:
    """One array this tick: mdstat plus the newest stored sample."""

    name: str
    state: str  # active | inactive | broken
    level: str | None
    role: str  # data | system | swap
    status: str | None  # "UU_U"
    degraded: int  # missing members: sysfs degraded, else the '_' in the status
    devices: dict[str, str]  # member -> mdstat flags ("F", "S", ...)
    run_id: int | None  # the open run
    action: str | None  # the running operation
    done_blocks: int | None
    total_blocks: int | None
    percent: float | None  # as printed
    mismatch_cnt: int | None
    queued: bool  # resync=DELAYED / PENDING
    # What holds the run back, as shown on the page (app/diagnosis): verdict, since, sentence.
    verdict: tuple[str, float, str] | None = None
    # md has given up on it (app.md.failure.is_failed: the word, the counts, sysfs array_state)
    failed: bool = False

    @property
    def progress(self) -> float | None:
        """0..100, our own from done/total, else the kernel's printed percent."""
        if self.done_blocks is not None and self.total_blocks:
            return 100.0 * self.done_blocks / self.total_blocks
        return self.percent


@dataclass(frozen=True)
class RunEnd:
    run_id: int
    array: str
    action: str
    outcome: str  # completed | interrupted | restarted | vanished
    started: float
    finished: float


@dataclass(frozen=True)
class Drift:
    event_id: int
    array: str | None
    key: str
    desired: str | None
    current: str | None


@dataclass(frozen=True)
class Slower:
    """mdboost put a preset back because it made a sync slower (app/tuning/session/never_slower)."""

    event_id: int
    array: str | None
    preset: str
    sentence: str


@dataclass(frozen=True)
class TickFacts:
    now: float  # the sampler's clock
    arrays: tuple[ArrayFacts, ...] | None  # None: this tick could not sample
    error: str | None = None
    ended: dict[int, RunEnd] = field(default_factory=dict)  # runs open last time, ended since
    boost_session: tuple[int, tuple[str, ...]] | None = None  # open session: id, tuned arrays
    drift: tuple[Drift, ...] = ()  # drift events newer than the state's drift_seen
    slower: tuple[Slower, ...] = ()  # 'slower' events newer than it
    last_event_id: int = 0  # newest tuning event id (the baseline on a first start)
    # The open session's job goes on (a phase of it runs or is to come): between two phases of
    # an expansion boost is kept for the next one on purpose, not left on.
    session_needed: bool = False


@dataclass(frozen=True)
class Event:
    kind: str
    key: str
    array: str | None = None
    run_id: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ArrayMemory:
    """What the detector remembers of one array from one tick to the next (saved in the State's
    "arrays" as a JSON object with these keys); the defaults are an array not seen before."""

    state: str | None = None  # mdstat's word: active | inactive | broken
    failed: bool = False  # md had given up on it
    degraded: int = 0  # missing members
    devices: dict[str, str] = field(default_factory=dict)  # member -> mdstat flags ("F", ...)
    run_id: int | None = None  # the open run
    action: str | None = None  # the running operation
    role: str | None = None  # data | system | swap
    done: int | None = None  # blocks done at the tick
    milestone: int | None = None  # milestones (of EventRules.milestone_percent) told so far
    progress_ts: float | None = None  # sampler clock of the run's last progress (stall timer)
    stalled_since: float | None = None  # sampler clock the stall was told from
    verdict: str | None = None  # what held the run back (remembered while a run is open)
    told_verdicts: list[str] = field(default_factory=list)  # why-slow verdicts told this run

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> "ArrayMemory":
        """The memory a saved JSON object holds, in the present format whatever its age."""
        saved = upgraded(saved)
        return cls(
            state=saved["state"],
            failed=saved["failed"],
            degraded=saved["degraded"] or 0,
            devices=saved["devices"],
            run_id=saved["run_id"],
            action=saved.get("action"),
            role=saved.get("role"),
            done=saved.get("done"),
            milestone=saved.get("milestone"),
            progress_ts=saved.get("progress_ts"),
            stalled_since=saved.get("stalled_since"),
            verdict=saved.get("verdict"),
            told_verdicts=saved.get("told_verdicts") or [],
        )

    def saved(self) -> dict[str, Any]:
        """The JSON object to save; an idle array has no verdict to remember."""
        saved = asdict(self)
        if self.run_id is None:
            del saved["verdict"]
            del saved["told_verdicts"]
        return saved


def upgraded(saved: dict[str, Any]) -> dict[str, Any]:
    """A saved array memory in the present format: one that has no "failed" knew only mdstat's
    word for it, and its other missing keys read as unknown (None)."""
    if "failed" in saved:
        return saved
    return {**saved, "failed": saved["state"] == "broken"}
