"""The per-array view the API and the page share: parse fields, role, sysfs extras, current run."""

from typing import TYPE_CHECKING

from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.md import mdstat
from app.md.attributes import ArraySysfs
from app.md.failure import is_failed
from app.shapes import arrays as shapes

if TYPE_CHECKING:  # the snapshot imports the diagnosis, which imports tuning.plan, which this
    from app.live.snapshot import ArrayNow

SYNOLOGY_SMALL_BLOCKS = 16 * 1024 * 1024  # DSM's system and swap arrays are a few GiB


def role_of(array: mdstat.Array) -> str:
    """system / swap for DSM's own small raid1 arrays md0 / md1; data for everything else."""
    small_raid1 = array.level == "raid1" and (array.blocks or 0) < SYNOLOGY_SMALL_BLOCKS
    if small_raid1 and array.name == "md0":
        return "system"
    if small_raid1 and array.name == "md1":
        return "swap"
    return "data"


def failed_names(md: mdstat.MdStat, host: Host) -> list[str]:
    """The arrays md has given up on, in mdstat's order (reads sysfs: before a tick)."""
    return [a.name for a in md.arrays if is_failed(a, *_array_state(a.name, host))]


def _array_state(name: str, host: Host) -> tuple[str | None, int | None]:
    """sysfs array_state and degraded of one array (None where unreadable)."""
    if not ARRAY_NAME.fullmatch(name):
        return None, None
    state = host.read(host.md_attr_path(name, "array_state"))
    degraded = host.read(host.md_attr_path(name, "degraded"))
    return (
        state.strip() if state else None,
        int(degraded) if degraded and degraded.strip().isdigit() else None,
    )


def severity(array: mdstat.Array, failed: bool, degraded: bool) -> str:
    """critical: its data is not available; warning: degraded, not running, or a state mdboost
    does not know; ok otherwise."""
    if failed:
        return "critical"
    if degraded or array.state != "active":
        return "warning"
    return "ok"


def array_view(state: "ArrayNow") -> shapes.ArrayView:
    """The API's and the page's view of one array, from the sampler's present (no kernel read)."""
    array, sysfs, failed = state.array, state.sysfs, state.failed
    sysfs_degraded = bool(sysfs is not None and sysfs.degraded)
    return shapes.ArrayView(
        name=array.name,
        state=array.state,
        read_only=array.read_only,
        auto_read_only=array.auto_read_only,
        level=array.level,
        super=array.super,
        blocks=array.blocks,
        chunk_kb=array.chunk_kb,
        devices=list(array.devices),
        raid_disks=array.raid_disks,
        active_disks=array.active_disks,
        status=array.status,
        bitmap=array.bitmap,
        # A queued job (delayed, pending) has only its action (as in `mdboost parse`).
        sync=mdstat.Sync(array.sync.action) if array.sync and array.queued else array.sync,
        role=role_of(array),
        degraded=array.degraded,
        failed=failed,
        sysfs=_sysfs(sysfs) if sysfs is not None else None,
        severity=severity(array, failed, array.degraded or sysfs_degraded),
        # The open run as the tick keeps it (history.open_run).
        run=state.run,
    )


def _sysfs(sysfs: ArraySysfs) -> shapes.ArraySysfsBody:
    return shapes.ArraySysfsBody(
        array_state=sysfs.array_state,
        sync_action=sysfs.sync_action,
        sync_speed_kb_s=sysfs.sync_speed_kb_s,
        degraded=sysfs.degraded,
        mismatch_cnt=sysfs.mismatch_cnt,
        stripe_cache_size=sysfs.stripe_cache_size,
        sync_speed_min_kb_s=sysfs.sync_speed_min.kb_s if sysfs.sync_speed_min else None,
        sync_speed_max_kb_s=sysfs.sync_speed_max.kb_s if sysfs.sync_speed_max else None,
    )


def current(host: Host) -> mdstat.MdStat:
    """The arrays as the kernel shows them now (no mdstat: no arrays)."""
    text = host.read_mdstat()
    return mdstat_parse.parse(text) if text is not None else mdstat.MdStat(None, ())
