"""The per-array view the API and the page share: parse fields, role, sysfs extras, current run."""

from typing import TYPE_CHECKING, Any

from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.live.tick import Tick
from app.md import mdstat

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


def is_failed(array: mdstat.Array, array_state: str | None) -> bool:
    """md has given up on the array, so its data is not available: mdstat says "broken" (Linux
    6.12+), or sysfs array_state does (kernels 5.4 to 6.11 print "active" in mdstat then)."""
    return array.broken or array_state == "broken"


def failed_names(md: mdstat.MdStat, host: Host) -> list[str]:
    """The arrays md has given up on, in mdstat's order (reads array_state: before a tick)."""
    return [a.name for a in md.arrays if is_failed(a, _array_state(a.name, host))]


def failed_in(tick: Tick) -> list[str]:
    """The arrays md has given up on, as the tick read them, in mdstat's order."""
    md = tick.parsed
    if md is None:
        return []
    states = {name: sysfs.array_state for name, sysfs in tick.sysfs.items()}
    return [a.name for a in md.arrays if is_failed(a, states.get(a.name))]


def _array_state(name: str, host: Host) -> str | None:
    if not ARRAY_NAME.fullmatch(name):
        return None
    text = host.read(host.md_attr_path(name, "array_state"))
    return text.strip() if text else None


def severity(array: mdstat.Array, failed: bool, degraded: bool) -> str:
    """critical: its data is not available; warning: degraded, not running, or a state mdboost
    does not know; ok otherwise."""
    if failed:
        return "critical"
    if degraded or array.state != "active":
        return "warning"
    return "ok"


def array_view(state: "ArrayNow") -> dict[str, Any]:
    """The API's and the page's view of one array, from the sampler's present (no kernel read)."""
    array, sysfs = state.array, state.sysfs
    view = mdstat.array_to_json(array)
    view["role"] = role_of(array)
    view["degraded"] = array.degraded
    view["failed"] = is_failed(array, sysfs.array_state if sysfs else None)
    view["sysfs"] = (
        {
            "array_state": sysfs.array_state,
            "sync_action": sysfs.sync_action,
            "sync_speed_kb_s": sysfs.sync_speed_kb_s,
            "degraded": sysfs.degraded,
            "mismatch_cnt": sysfs.mismatch_cnt,
            "stripe_cache_size": sysfs.stripe_cache_size,
            "sync_speed_min_kb_s": sysfs.sync_speed_min.kb_s if sysfs.sync_speed_min else None,
            "sync_speed_max_kb_s": sysfs.sync_speed_max.kb_s if sysfs.sync_speed_max else None,
        }
        if sysfs is not None
        else None
    )
    sysfs_degraded = bool(sysfs is not None and sysfs.degraded)
    view["severity"] = severity(array, view["failed"], array.degraded or sysfs_degraded)
    view["run"] = state.run
    return view


def current(host: Host) -> mdstat.MdStat:
    """The arrays as the kernel shows them now (no mdstat: no arrays)."""
    text = host.read_mdstat()
    return mdstat_parse.parse(text) if text is not None else mdstat.MdStat(None, ())
