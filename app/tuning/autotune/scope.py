"""What an auto-tune sweep may try: the array (named, or the one syncing), the values found now,
and the phases within the RAM budget and md's floor; and the limits the sampler's tick read."""

from app.config import Settings
from app.forecast import physics
from app.kernel.host import ARRAY_NAME, Host
from app.kernel.knobs import read_knob
from app.live.tick import Tick
from app.md import mdstat
from app.md.knobs import CATALOGUE, RAID_WITH_STRIPE_CACHE, md_floor, stripe_cache_mib
from app.tuning.autotune import sweep
from app.tuning.errors import TuningError
from app.tuning.planning.knob_plan import budget_mib, member_disks, stripe_cache_total_mib

TUNABLE_ACTIONS = ("resync", "recovery", "reshape")


class AutoTuneRefused(TuningError):
    """A sweep cannot start here and now; nothing was written."""


def pick_array(
    tick: Tick | None, requested: str | None, host: Host
) -> tuple[mdstat.Array, tuple[int, int | None] | None]:
    """The array to sweep, from the sampler's last tick: named, or the one syncing; with its
    sysfs raid_disks (new, old) for the grow's knee."""
    if tick is None or tick.parsed is None or tick.ts is None:
        raise AutoTuneRefused("the sampler has not read the arrays yet: try again in a moment")
    syncing = [a for a in tick.parsed.arrays if ARRAY_NAME.fullmatch(a.name) and a.syncing]
    if requested is not None:
        array = tick.parsed.array(requested)
        if array is None:
            raise AutoTuneRefused(f"no array named {requested[:40]!r}")
    elif len(syncing) == 1:
        array = syncing[0]
    elif not syncing:
        raise AutoTuneRefused("no array is syncing: auto-tune measures a running sync")
    else:
        names = ", ".join(a.name for a in syncing)
        raise AutoTuneRefused(f"{names} are syncing: name the array to tune")
    if array.sync is None or not array.sync.running or array.sync.action not in TUNABLE_ACTIONS:
        raise AutoTuneRefused(
            f"{array.name} runs no resync, recovery or reshape: nothing to measure on"
        )
    if array.name in tick.failed():
        raise AutoTuneRefused(f"{array.name} has failed: mdboost never tunes a failed array")
    sysfs = tick.sysfs.get(array.name)
    return array, sysfs.raid_disks if sysfs else None


def refuse_through_a_limit(array: mdstat.Array, limits: physics.Limits) -> None:
    """AutoTuneRefused when the sync is held by its max limit: measuring through the limit finds
    nothing, and auto-tune raises no limit itself (boost does)."""
    speed = array.sync.speed_kb_s if array.sync else None
    if speed is not None and physics.held_by_max(speed, limits):
        raise AutoTuneRefused(
            f"{array.name} syncs at {speed} KiB/s, held by its max limit "
            f"({physics.ceiling(limits):.0f} KiB/s): a bigger cache cannot make it faster and "
            "measuring through the limit finds nothing. Raise the limit first (boost does)."
        )


def available_mib(tick: Tick, settings: Settings) -> float:
    """MemAvailable in MiB as the tick read it, when above the floor: a sweep may need it for a
    bigger cache."""
    available = (tick.mem_available_kib or 0) / 1024
    if available < settings.autotune_mem_floor_mb:
        raise AutoTuneRefused(
            f"MemAvailable is {available:.0f} MiB, under the floor of "
            f"{settings.autotune_mem_floor_mb:.0f} MiB: no RAM to try a bigger cache"
        )
    return available


def phases(
    host: Host, settings: Settings, array: mdstat.Array, md: mdstat.MdStat, available_mib: float
) -> tuple[dict[str, int], list[sweep.Phase]]:
    """The values found now and the phases to sweep, within the RAM budget and md's floor."""
    start: dict[str, int] = {}
    found: list[sweep.Phase] = []
    for name in ("stripe_cache_size", "read_ahead_kb"):
        knob = CATALOGUE[name]
        if not knob.applies_to(array.level):
            continue
        value = read_knob(host, knob, array.name)
        if value is None or not value.isdigit():
            continue
        start[name] = int(value)
    if "stripe_cache_size" in start and array.level in RAID_WITH_STRIPE_CACHE:
        disks = member_disks(array)
        current = start["stripe_cache_size"]
        others = stripe_cache_total_mib(md, host, skip={array.name})
        share = budget_mib(host, settings.max_cache_mb) - others
        floor_mib = settings.autotune_mem_floor_mb

        def fits(entries: int) -> bool:
            extra = stripe_cache_mib(entries, disks) - stripe_cache_mib(current, disks)
            return stripe_cache_mib(entries, disks) <= share and (
                available_mib - extra >= floor_mib
            )

        reshaping = array.sync is not None and array.sync.action == "reshape"
        floor = md_floor(
            "stripe_cache_size", array.level, array.chunk_kb, array.raid_disks, reshaping
        )
        phase = sweep.stripe_cache_phase(current, floor, fits)
        if phase.candidates:
            found.append(phase)
    if "read_ahead_kb" in start:
        phase = sweep.read_ahead_phase(start["read_ahead_kb"])
        if phase.candidates:
            found.append(phase)
    return start, found


def limits(tick: Tick, array: str) -> physics.Limits:
    """The array's effective limits as the tick read them: its own when local, else global."""
    return tick.forecast_limits(array)
