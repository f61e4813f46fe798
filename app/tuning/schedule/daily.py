"""Daily windows on the box's wall clock (pure): HH:MM, the zone TZ names, and when a window
opens and closes, across changes of daylight saving time."""

import logging
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.tuning.errors import TuningError

log = logging.getLogger(__name__)

MINUTES_PER_DAY = 1440
LOCALTIME = Path("/etc/localtime")


class ScheduleError(TuningError, ValueError):
    """A schedule that cannot be kept (not a time, an empty window); nothing was stored."""

    status = 422


def parse_hhmm(text: str) -> int:
    """'01:00' -> 60; ScheduleError for anything that is not a time of day."""
    hours, sep, minutes = text.strip().partition(":")
    digits = hours.isascii() and minutes.isascii() and hours.isdigit() and minutes.isdigit()
    if not sep or not digits or len(minutes) != 2:
        raise ScheduleError(f"{text[:10]!r} is not a time of day (HH:MM)")
    if not (0 <= int(hours) <= 23 and 0 <= int(minutes) <= 59):
        raise ScheduleError(f"{text[:10]!r} is not a time of day (00:00 to 23:59)")
    return int(hours) * 60 + int(minutes)


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def local_zone(name: str | None) -> tuple[tzinfo, str]:
    """The zone TZ names (Europe/Berlin, :Europe/Berlin, a zone file's path), else the system's
    /etc/localtime, else UTC; with its name for the page."""
    if name:
        key = name.removeprefix(":")
        try:
            if key.startswith("/"):
                with open(key, "rb") as file:
                    return ZoneInfo.from_file(file, key=key), key
            return ZoneInfo(key), key
        except (ZoneInfoNotFoundError, ValueError, OSError) as error:
            log.error(
                "TZ=%s is not a time zone this system knows (%s): schedules use UTC", name, error
            )
            return ZoneInfo("UTC"), "UTC"
    try:
        with LOCALTIME.open("rb") as file:
            return ZoneInfo.from_file(file, key="localtime"), _localtime_name()
    except (OSError, ValueError):
        return ZoneInfo("UTC"), "UTC"


def named_zone(name: str) -> ZoneInfo:
    """The IANA zone `name` (America/Los_Angeles); ScheduleError when this system knows none."""
    try:
        if len(name) > 64 or name.startswith("/"):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ScheduleError(f"{name[:64]!r} is not a time zone (Europe/Berlin, say)") from error


def minute_of_day(ts: float, zone: tzinfo) -> int:
    wall = datetime.fromtimestamp(ts, zone)
    return wall.hour * 60 + wall.minute


def _localtime_name() -> str:
    """Europe/Berlin when /etc/localtime links into a zoneinfo tree, else 'NAS time' (a copy of
    the NAS's file, as compose.yaml mounts it)."""
    try:
        target = str(LOCALTIME.resolve())
    except OSError:
        return "NAS time"
    _, found, zone = target.partition("/zoneinfo/")
    return zone if found else "NAS time"


def _at(day: date, minute: int, zone: tzinfo) -> float:
    """Unix seconds of a wall-clock time. A time the clock skips (02:30 the night it goes
    forward) is the moment it jumps past it, as cron does; a time it shows twice is the first."""
    wall = datetime.combine(day, time(minute // 60, minute % 60))
    later = int(wall.replace(tzinfo=zone).timestamp())  # fold=0: the offset before a change
    if datetime.fromtimestamp(later, zone).replace(tzinfo=None) == wall:
        return float(later)
    earlier = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    after = datetime.fromtimestamp(later, zone).utcoffset()
    while later - earlier > 1:  # the change lies between: find its second
        middle = (earlier + later) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == after:
            later = middle
        else:
            earlier = middle
    return float(later)


def window_at(
    start_minute: int, end_minute: int, now: float, zone: tzinfo
) -> tuple[float, float] | None:
    """The window [start, end) that contains `now`, in unix seconds, or None."""
    today = datetime.fromtimestamp(now, zone).date()
    for day in (today - timedelta(days=1), today):
        start = _at(day, start_minute, zone)
        end_day = day if end_minute > start_minute else day + timedelta(days=1)
        end = _at(end_day, end_minute, zone)
        if start <= now < end:
            return start, end
    return None


def next_start(start_minute: int, now: float, zone: tzinfo) -> float:
    today = datetime.fromtimestamp(now, zone).date()
    for offset in range(3):
        start = _at(today + timedelta(days=offset), start_minute, zone)
        if start > now:
            return start
    raise AssertionError("a time of day recurs within three days")


def minutes_of(start_minute: int, end_minute: int) -> set[int]:
    """The minutes of the day a window covers (it may run past midnight)."""
    length = (end_minute - start_minute) % MINUTES_PER_DAY
    return {(start_minute + i) % MINUTES_PER_DAY for i in range(length)}
