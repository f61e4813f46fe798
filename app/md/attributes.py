"""What md's sysfs attributes say about one array, and md's rule for the limit in effect: plain
frozen values (admin-guide/md.rst, "md devices in sysfs"), read by app/kernel/host.py."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SpeedLimit:
    kb_s: int  # KiB/s in effect
    source: str  # "system" (follows /proc/sys/dev/raid) or "local" (set for this array)


def parse_speed_limit(text: str | None) -> SpeedLimit | None:
    """sync_speed_min/max read as "1000 (system)" or "50000 (local)"."""
    if text is None:
        return None
    words = text.split()
    if not words:
        return None
    try:
        kb_s = int(words[0])
    except ValueError:
        return None
    source = words[1].strip("()") if len(words) > 1 else "local"
    return SpeedLimit(kb_s=kb_s, source=source)


@dataclass(frozen=True)
class ArraySysfs:
    """One array's sysfs view; None where the kernel has no such file."""

    # clean | active | readonly | read-auto | inactive | ... | broken: md has given up on the
    # array (md.c array_state_show(): since 5.4, shown where "clean" would be)
    array_state: str | None
    sync_action: str | None  # idle | resync | recover | reshape | check | repair | frozen
    sync_completed_sectors: tuple[int, int] | None  # (done, total) 512-byte sectors
    sync_speed_kb_s: int | None  # KiB/s, the kernel's ~30 s average
    reshape_position: str | None  # sector or "none"
    degraded: int | None  # number of missing devices
    mismatch_cnt: int | None  # sectors found inconsistent by the last check
    raid_disks: tuple[int, int | None] | None  # (new, old during a reshape)
    stripe_cache_size: int | None  # entries (raid4/5/6 only)
    stripe_cache_active: int | None  # entries in use now (raid4/5/6 only)
    sync_speed_min: SpeedLimit | None  # KiB/s
    sync_speed_max: SpeedLimit | None  # KiB/s


def effective_limit(local: SpeedLimit | None, global_kb_s: int | None) -> SpeedLimit | None:
    """md's limit for one array: sync_speed_min/max says its value and source; kernels without
    the per-array file follow /proc/sys/dev/raid (admin-guide/md.rst)."""
    if local is not None:
        return local
    return SpeedLimit(global_kb_s, "system") if global_kb_s is not None else None


# md's (min, max) limits in effect for one array
EffectiveLimits = tuple[SpeedLimit | None, SpeedLimit | None]


def effective_limits(
    sysfs: ArraySysfs | None, global_limits: tuple[int | None, int | None]
) -> EffectiveLimits:
    """md's (min, max) for one array: its sync_speed_min/max where sysfs has them, else the
    global speed_limit_min/max."""
    local_min = sysfs.sync_speed_min if sysfs is not None else None
    local_max = sysfs.sync_speed_max if sysfs is not None else None
    return effective_limit(local_min, global_limits[0]), effective_limit(
        local_max, global_limits[1]
    )
