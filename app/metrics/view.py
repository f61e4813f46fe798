"""What /metrics renders: one box's present, as plain frozen values (no I/O, no database).

The sampler's tick fills these (app/metrics/present.py); render() turns them into text. Keeping
them plain lets the exposition be tested on captured kernel trees without a server.
"""

from dataclasses import dataclass

from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast
from app.kernel.host import ArraySysfs
from app.kernel.mdstat import Array


@dataclass(frozen=True)
class MemberIO:
    """One member's I/O over the diagnosis window (app/diagnosis: /proc/diskstats deltas of its
    whole disk over ~30 s), while its array syncs."""

    member: str  # as printed in mdstat, e.g. "sda5"
    busy_ratio: float  # share of the interval with I/O in flight, 0..1
    wait_seconds: float  # average time per completed request


@dataclass(frozen=True)
class ArrayNow:
    """One array: its mdstat entry, its sysfs attributes and its open run's forecast."""

    array: Array
    sysfs: ArraySysfs | None  # None where host.py reads no sysfs (names other than mdN)
    forecast: Forecast | None = None
    members: tuple[MemberIO, ...] = ()


@dataclass(frozen=True)
class KnobNow:
    """A knob of the open tuning session, as the last tick read it."""

    knob: str  # catalogue name, e.g. "stripe_cache_size"
    target: str | None  # array or disk; None for the global knobs
    unit: str  # catalogue unit: "KiB/s", "KiB", "entries", ...
    desired: str  # what mdboost wrote, normalised: "4096", "system"
    current: str | None  # what the kernel holds now; None when unreadable
    drift: bool  # someone else changed it since mdboost wrote it


@dataclass(frozen=True)
class BoxNow:
    """Everything /metrics says about the box."""

    arrays: tuple[ArrayNow, ...] = ()
    speed_limit_min_kb_s: int | None = None  # /proc/sys/dev/raid/speed_limit_min, KiB/s
    speed_limit_max_kb_s: int | None = None  # /proc/sys/dev/raid/speed_limit_max, KiB/s
    last_success: float | None = None  # unix seconds of the sampler's last tick without error
    pool: PoolForecast | None = None  # the SHR pool as one job, while one of its arrays syncs
    preset: str | None = None  # the open tuning session's preset; None when nothing is tuned
    session_started: float | None = None  # unix seconds
    knobs: tuple[KnobNow, ...] = ()
