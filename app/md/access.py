"""What tuning may write here, as app/kernel/access.py finds it without writing anything: for the
whole process (TuningAccess, checked at start-up) and per knob (KnobAccess, as arrays come and
go). Plain values, so the page and the API show them without importing the code that probes."""

from dataclasses import dataclass

HOW_TO_TUNE = (
    "to tune, run the container with `privileged: true` (or, narrower: cap_add SYS_ADMIN and the "
    "host's sysfs bind-mounted read-write at MDBOOST_SYS_ROOT)"
)


@dataclass(frozen=True)
class TuningAccess:
    """What tuning may write here; `problems` says why not, one short phrase each."""

    md_sysfs_writable: bool  # the per-array knobs under sys_root/block/md*/md
    raid_sysctl_writable: bool  # the global limits under proc_root/sys/dev/raid
    cap_sys_admin: bool | None  # None: this process's capabilities are not readable here
    problems: tuple[str, ...]

    @property
    def writable(self) -> bool:
        """Tuning works: per-array knobs are writable (their limits can replace the global ones)."""
        return self.md_sysfs_writable and self.cap_sys_admin is not False

    def summary(self) -> str:
        """The one start-up log line."""
        if not self.writable:
            return (
                f"tuning is off, monitoring works: the md knobs are not writable "
                f"({'; '.join(self.problems)}); {HOW_TO_TUNE}"
            )
        if not self.raid_sysctl_writable:
            return (
                "tuning is on: the per-array md knobs are writable; the global speed limits are "
                f"not ({'; '.join(self.problems)}), so per-array sync_speed_min/max replace them"
            )
        return "tuning is on: the per-array md knobs and the global speed limits are writable"


@dataclass(frozen=True)
class KnobAccess:
    """A global or per-array knob: does this kernel have it, and may this process write it."""

    knob: str
    target: str | None
    supported: bool
    writable: bool
