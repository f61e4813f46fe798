"""The per-array view the API and the page share: parse fields, role, sysfs extras, current run."""

from typing import TYPE_CHECKING

from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.live.tick import Tick
from app.md import mdstat
from app.md.attributes import ArraySysfs
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


# Members each level can lose and still serve its data (raid5.c max_degraded; raid1 needs one).
_CAN_LOSE = {"raid4": 1, "raid5": 1, "raid6": 2}
# Levels without redundancy: a faulty member is a failed array.
_NO_REDUNDANCY = ("raid0", "linear")


def is_failed(array: mdstat.Array, array_state: str | None, degraded: int | None = None) -> bool:
    """md has given up on the array, so its data is not available. Judged from the three things
    the kernels show, because none alone is enough on every kernel:
    - the word: mdstat says "broken" (Linux 6.12+), or sysfs array_state does (5.4 onwards, after
      the next I/O; 5.10 to 6.11 print "active" in mdstat then);
    - the counts: fewer working members than the level needs, from mdstat's [n/m] or else sysfs
      `degraded`; this holds while array_state still says write-pending (6.1 and 6.12 show that
      for seconds, the faulty member `faulty,blocked`), and when sysfs cannot be read;
    - a faulty member of a level without redundancy (raid0, linear)."""
    if array.broken or array_state == "broken":
        return True
    if array.state != "active":
        return False  # inactive: not running, not failed (severity says warning)
    if array.level in _NO_REDUNDANCY:
        return any("F" in d.flags for d in array.devices)
    total = array.raid_disks
    working = array.active_disks
    if working is None and total is not None and degraded is not None:
        working = total - degraded
    if total is None or working is None:
        return False
    if array.level in _CAN_LOSE:
        return working < total - _CAN_LOSE[array.level]
    if array.level == "raid1":
        return working < 1
    if array.level == "raid10":
        return _raid10_lost_a_whole_copy_set(array)
    return False


def _raid10_lost_a_whole_copy_set(array: mdstat.Array) -> bool:
    """raid10.c _enough(): every set of `copies` neighbouring slots, one set starting every
    `near_copies` slots, needs one member in sync. The slots come from mdstat's [UU_U]; without
    it or the copies (a wrapped line), the counts cannot tell and only the word decides."""
    status = array.status
    if not status or (array.near_copies is None and array.far_copies is None):
        return False
    near = array.near_copies or 1
    copies = near * (array.far_copies or 1)
    disks = len(status)
    first = 0
    while True:
        if all(status[(first + k) % disks] != "U" for k in range(copies)):
            return True
        first = (first + near) % disks
        if first == 0:
            return False


def failed_names(md: mdstat.MdStat, host: Host) -> list[str]:
    """The arrays md has given up on, in mdstat's order (reads sysfs: before a tick)."""
    return [a.name for a in md.arrays if is_failed(a, *_array_state(a.name, host))]


def failed_in(tick: Tick) -> list[str]:
    """The arrays md has given up on, as the tick read them, in mdstat's order."""
    md = tick.parsed
    if md is None:
        return []
    failed = []
    for array in md.arrays:
        sysfs = tick.sysfs.get(array.name)
        state, degraded = (sysfs.array_state, sysfs.degraded) if sysfs else (None, None)
        if is_failed(array, state, degraded):
            failed.append(array.name)
    return failed


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
    array, sysfs = state.array, state.sysfs
    failed = is_failed(
        array, sysfs.array_state if sysfs else None, sysfs.degraded if sysfs else None
    )
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
