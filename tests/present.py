"""Arrays as the sampler's present holds them, built by hand from a kernel tree's readings."""

from typing import Any

from app.live.snapshot import ArrayNow
from app.live.tick import Tick
from app.md.attributes import ArraySysfs
from app.md.mdstat import Array, MdStat


def array_now(array: Array, sysfs: ArraySysfs | None, **fields: Any) -> ArrayNow:
    """`array` with its sysfs, whether md gave up on it judged as a tick judges it."""
    tick = Tick(parsed=MdStat(None, (array,)), sysfs={array.name: sysfs} if sysfs else {})
    return ArrayNow(array, sysfs, failed=array.name in tick.failed(), **fields)
