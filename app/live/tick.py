"""The tick: what one sample_once() read and did, handed to the present, the tuner and the
notifier so that none of them reads the kernel again: a fact is read once per tick."""

from dataclasses import dataclass, field

from app.diagnosis.verdicts import Diagnosis, VerdictChange
from app.forecast import physics
from app.md.attributes import ArraySysfs, EffectiveLimits, effective_limits
from app.md.disks import DiskStat, MemberDisk
from app.md.failure import is_failed
from app.md.mdstat import MdStat


@dataclass(frozen=True)
class FinishedRun:
    run_id: int
    array: str
    action: str
    outcome: str


@dataclass
class Tick:
    """What one sample_once() saw and did."""

    parsed: MdStat | None = None
    ts: float | None = None  # unix seconds (the app's clock) when the kernel was read
    mono: float | None = None  # seconds of the monotonic clock then (differences only)
    # Seconds the wall clock stepped since the last tick (0.0: none). Whatever holds times of
    # earlier ticks adds it to them: they are on the new wall time then (app/clock.py).
    clock_step: float = 0.0
    found_mdstat: bool = False  # /proc/mdstat exists (it does not without the md driver)
    sysfs: dict[str, ArraySysfs] = field(default_factory=dict)  # per mdN array
    global_limits: tuple[int | None, int | None] = (None, None)  # speed_limit_min/max, KiB/s
    # Each array's (min, max) in effect (md/attributes.effective_limits), worked out once a
    # tick: the samples, the diagnosis, the forecast, the present and auto-tune read these.
    limits: dict[str, EffectiveLimits] = field(default_factory=dict)
    mem_available_kib: int | None = None  # /proc/meminfo MemAvailable, KiB
    # /proc/diskstats of the running arrays and their members (what the diagnosis reads)
    diskstats: dict[str, DiskStat] = field(default_factory=dict)
    # Each member disk's whole size, 1 KiB blocks (/sys/block/<disk>/size): read again only when
    # the arrays' members change; the planner sees a disk's tail above the arrays by it.
    disk_kib: dict[str, int] = field(default_factory=dict)
    # The disk under each member: its name, size and model (read with disk_kib), for the page.
    disks: dict[str, MemberDisk] = field(default_factory=dict)
    disk_rotational: dict[str, bool] = field(default_factory=dict)  # queue/rotational, read alike
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)  # per running mdN array
    verdict_changes: list[VerdictChange] = field(default_factory=list)
    any_running: bool = False
    written: int = 0
    finished_runs: list[FinishedRun] = field(default_factory=list)
    error: str | None = None
    _failed: tuple[str, ...] | None = field(default=None, repr=False)  # failed() works it out

    def failed(self) -> tuple[str, ...]:
        """The arrays md has given up on, as this tick read them, in mdstat's order: judged once
        (app/md/failure.py), then the tuner, the present and a push read it."""
        if self._failed is None:
            arrays = self.parsed.arrays if self.parsed is not None else ()
            found = [(a, self.sysfs.get(a.name)) for a in arrays]
            self._failed = tuple(
                a.name
                for a, sysfs in found
                if is_failed(
                    a, sysfs.array_state if sysfs else None, sysfs.degraded if sysfs else None
                )
            )
        return self._failed

    def speed_limits(self, array: str) -> EffectiveLimits:
        """The array's (min, max) in effect, worked out once (the sampler does it for every
        array it read; a tick built by hand gets them here)."""
        if array not in self.limits:
            self.limits[array] = effective_limits(self.sysfs.get(array), self.global_limits)
        return self.limits[array]

    def forecast_limits(self, array: str) -> physics.Limits:
        """The array's limits in effect and its stripe cache, as the forecast model takes them."""
        low, high = self.speed_limits(array)
        sysfs = self.sysfs.get(array)
        cache = sysfs.stripe_cache_size if sysfs is not None else None
        return physics.Limits(low.kb_s if low else None, high.kb_s if high else None, cache)
