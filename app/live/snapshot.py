"""The present as the sampler's last tick left it, as plain frozen values (no I/O, no database):
what every page, poll, JSON endpoint and /metrics reads, so no request opens /proc or /sys.

app/live/snapshot_builder.py builds one Snapshot per tick and replaces the reference; a request
takes `snapshot_builder.snapshot` once and sees one consistent tick. Keeping them plain lets the
exposition and the views be tested on captured kernel trees without a server.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.diagnosis.verdicts import Diagnosis
from app.forecast.boost import BoostEstimate
from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast, PoolMember
from app.md.access import KnobAccess
from app.md.attributes import ArraySysfs, SpeedLimit
from app.md.disks import MemberDisk
from app.md.mdstat import Array, MdStat
from app.planner.layout import Pool
from app.shapes.arrays import Run
from app.shapes.tuning import TuningState


@dataclass(frozen=True)
class MemberIO:
    """One member's I/O over the diagnosis window (app/diagnosis: /proc/diskstats deltas of its
    whole disk over ~30 s), while its array syncs."""

    member: str  # as printed in mdstat, e.g. "sda5"
    busy_ratio: float  # share of the interval with I/O in flight, 0..1
    wait_seconds: float  # average time per completed request


@dataclass(frozen=True)
class ArrayNow:
    """One array: its mdstat entry, its sysfs attributes, its effective limits, its open run with
    that run's forecast (kept up incrementally), what boost would make of it, and why it is
    slow, judged beside that estimate."""

    array: Array
    sysfs: ArraySysfs | None  # None where host.py reads no sysfs (names other than mdN)
    forecast: Forecast | None = None  # while the open run syncs
    members: tuple[MemberIO, ...] = ()
    run: Run | None = None  # the open run, None when idle
    speed_min: SpeedLimit | None = None  # effective sync_speed_min, KiB/s, with its source
    speed_max: SpeedLimit | None = None  # effective sync_speed_max, KiB/s, with its source
    # While it syncs: the verdicts of the last tick, their advice judged beside `boost`; None
    # from a tuning write until the next tick judges the new knobs.
    diagnosis: Diagnosis | None = None
    # The finish if boost were applied now, while it is not; None while boost is on (or the
    # run has no estimate to scale).
    boost: BoostEstimate | None = None
    failed: bool = False  # md has given up on it, as the tick judged (Tick.failed)

    @property
    def name(self) -> str:
        return self.array.name


@dataclass(frozen=True)
class KnobNow:
    """A knob of the open tuning session: what mdboost found and wrote (the journal's) and what
    the kernel held at the last reading (a tick's, or a write's own read-back). The one shape of
    a session knob below the web; the API's SessionKnob is built from it."""

    key: str  # journal key, e.g. "stripe_cache_size@md2"
    knob: str  # catalogue name, e.g. "stripe_cache_size"
    target: str | None  # array or disk; None for the global knobs
    unit: str  # catalogue unit: "KiB/s", "KiB", "entries", ...; "" for a knob no longer known
    original: str  # what the kernel held before mdboost wrote it; revert puts it back
    desired: str  # what mdboost wrote, normalised: "4096", "system"
    current: str | None  # what the kernel holds now; None when unreadable or not read yet
    drift: bool  # someone else changed it since mdboost wrote it


NOT_TUNED = TuningState(kind="off", preset=None, label="Not tuned", detail=None)


@dataclass(frozen=True)
class Job:
    """The owner's unit of work now: its phases in order and its finish (each phase's estimate
    summed); one array's run is a job of one phase."""

    phases: tuple[PoolMember, ...] = ()
    forecast: PoolForecast | None = None  # None while nothing runs nor is to come
    # The box's pools as this job will leave them (an expansion's tiers grown onto the new
    # disk): a plan made while it runs starts from these. Empty while nothing runs.
    pools_after: tuple[Pool, ...] = ()
    # Unix seconds the last phase ended while phases are still to come: DSM begins the next
    # array a little later, and until then md shows the pool idle. None while a phase runs.
    between_since: float | None = None
    # What is tuned now, as the tuner left it at its last tick or action (one state for the
    # switch, the headline, the API and a push): app/tuning/tuner.py publishes it.
    tuned: TuningState = field(default_factory=lambda: NOT_TUNED)

    @property
    def running(self) -> PoolMember | None:
        return next((p for p in self.phases if p.state == "running"), None)

    @property
    def to_come(self) -> tuple[str, ...]:
        """The arrays whose phases have not begun (held back by md, or DSM's next)."""
        return tuple(p.name for p in self.phases if p.state in ("queued", "coming"))

    def goes_on_for(self, arrays: Sequence[str]) -> bool:
        """Whether this job holds one of `arrays` and is not over: a phase runs or is to come."""
        ours = any(p.name in arrays for p in self.phases)
        return ours and (self.running is not None or bool(self.to_come))

    @property
    def spans_arrays(self) -> bool:
        """More than one array: the page shows the job as a pool."""
        return len(self.phases) > 1


@dataclass(frozen=True)
class Snapshot:
    """Everything the web says about the box now."""

    arrays: tuple[ArrayNow, ...] = ()
    speed_limit_min_kb_s: int | None = None  # /proc/sys/dev/raid/speed_limit_min, KiB/s
    speed_limit_max_kb_s: int | None = None  # /proc/sys/dev/raid/speed_limit_max, KiB/s
    last_success: float | None = None  # unix seconds of the sampler's last tick without error
    preset: str | None = None  # the open tuning session's preset; None when nothing is tuned
    session_started: float | None = None  # unix seconds
    session_id: int | None = None  # the open tuning session whose knobs `knobs` shows
    knobs: tuple[KnobNow, ...] = ()
    ts: float | None = None  # unix seconds of the tick shown; None before the first one
    mdstat: MdStat = field(default_factory=lambda: MdStat(None, ()))  # personalities, warnings
    found_mdstat: bool = False  # /proc/mdstat exists (no md driver loaded: it does not)
    job: Job = field(default_factory=Job)  # the owner's job: its phases and finish (job.py)
    available_kib: int | None = None  # /proc/meminfo MemAvailable, KiB: the stripe cache's budget
    knob_access: tuple[KnobAccess, ...] = ()
    kernel_release: str | None = None  # /proc/sys/kernel/osrelease, read once at start
    disk_kib: Mapping[str, int] = field(default_factory=dict)  # member disks' whole sizes, KiB
    disks: Mapping[str, MemberDisk] = field(default_factory=dict)  # member -> its disk
    disk_rotational: Mapping[str, bool] = field(default_factory=dict)  # ... and whether they spin

    @property
    def pool(self) -> PoolForecast | None:
        """The job as a pool's, when it spans several arrays (an SHR expansion)."""
        return self.job.forecast if self.job.spans_arrays else None

    def array(self, name: str) -> ArrayNow | None:
        return next((a for a in self.arrays if a.array.name == name), None)
