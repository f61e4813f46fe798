"""The tick's readings for the tracker in tests, as app/live/sampler.py takes them."""

from app.diagnosis.verdicts import Diagnosis, VerdictChange
from app.live.diagnosis_tracker import Tracker
from app.md.attributes import ArraySysfs, effective_limits
from app.md.mdstat import MdStat


def tick_with_readings(
    tracker: Tracker,
    now: float,
    parsed: MdStat,
    sysfs: dict[str, ArraySysfs],
    limits: tuple[int | None, int | None],
) -> tuple[dict[str, Diagnosis], list[VerdictChange]]:
    """tracker.tick() with the readings the sampler would pass: diskstats and MemAvailable."""
    host = tracker.host
    wanted = tracker.devices(parsed)
    disks = host.read_diskstats(wanted) if wanted else {}
    # the sampler works out each array's limits once a tick, as here
    effective = {a.name: effective_limits(sysfs.get(a.name), limits) for a in parsed.arrays}
    memory = host.read_meminfo().get("MemAvailable")
    return tracker.tick(now, parsed, sysfs, effective, disks, memory)
