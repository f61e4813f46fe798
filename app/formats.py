"""Numbers, times and labels as people read them: one formatter each, for the page, the
notifications and the diagnosis's sentences alike (no I/O)."""

import re
import time
from datetime import datetime, tzinfo

ROLE_LABELS = {"system": "Synology system", "swap": "Synology swap", "data": "data"}
ACTION_LABELS = {
    "reshape": "Reshaping",
    "resync": "Resyncing",
    "recovery": "Rebuilding",
    "check": "Checking",
    "delayed": "Queued (DELAYED)",
    "pending": "Queued (PENDING)",
}
# A preset applied during a run, as the run list says it (one notion of the tuning state).
PRESET_DONE = {"boost": "boosted", "auto-tune": "auto-tuned"}
# An array as a Synology owner knows it, where the box has DSM's layout (md0 system, md1 swap):
# md2 is the first storage pool's data array (an SHR pool may span md2, md3, ...).
SYNOLOGY_TITLES = {"data": "Storage pool", "system": "DSM system", "swap": "DSM swap"}
# DSM 7 names the disks of many models sataN (partitions sataNpM): Storage Manager's "Drive N".
DSM_DISK = re.compile(r"^sata(\d+)$")
# Each catalogue knob in the owner's words: its name and one sentence of what it means for them
# (the jargon that stays sits behind a tap that says this).
KNOB_WORDS = {
    "stripe_cache_size": (
        "Stripe cache",
        "memory md uses to gather whole stripes, so the disks get fewer, larger requests",
    ),
    "speed_limit_min": (
        "Rebuild speed floor",
        "the pace md keeps even while you use the NAS (yours slows down to allow it)",
    ),
    "speed_limit_max": ("Rebuild speed cap", "the pace md never goes above"),
    "sync_speed_min": (
        "Rebuild speed floor",
        "the pace md keeps on this array even while you use the NAS",
    ),
    "sync_speed_max": ("Rebuild speed cap", "the pace md never goes above on this array"),
    "read_ahead_kb": ("Read-ahead", "how much md reads from the array in one go"),
    "member_read_ahead_kb": ("Disk read-ahead", "how much each disk reads in one go"),
    "group_thread_cnt": ("Worker threads", "how many threads compute parity"),
    "queue_depth": ("Disk queue", "how many requests each disk may hold at once"),
}
# Member flags as mdstat prints them (md.c md_seq_show).
FLAG_LABELS = {"F": "faulty", "S": "spare", "W": "write-mostly", "J": "journal", "R": "replacement"}


# How often the forecast's range held the true finish on runs recorded after the model was frozen
# (91-100 % per held-out batch at the app's 5 s sampling; docs/forecast.md): said beside "likely".
RANGE_ODDS = "9 times in 10"


def a_or_an(word: str) -> str:
    """ "an 8.0 TB disk", "a 4.0 TB disk": by the sound of its first character (digits as said)."""
    return "an" if word[:1].lower() in "aeio8" or word.startswith(("11", "18")) else "a"


def plan_outcome(planned_s: float, real_s: float) -> str:
    """How a run went against its plan in words: "it took 2.6x as long as planned"."""
    if real_s >= planned_s * 1.05:
        return f"it took {real_s / planned_s:.1f}x as long as planned"
    if real_s <= planned_s * 0.95:
        return f"it took {real_s / planned_s * 100:.0f} % of the planned time"
    return "it took about as long as planned"


def mb_s(kb_s: float | None) -> str:
    """KiB/s as decimal MB/s, the unit DSM and the seeds use."""
    return "–" if kb_s is None else f"{kb_s * 1024 / 1e6:.1f} MB/s"


def knob_amount(value: str | int | None, unit: str) -> str:
    """A knob's value in the page's units: speeds in MB/s (2000000 KiB/s is "2048.0 MB/s"),
    sizes in MiB from 1 MiB up; anything else, or a value that is not a plain number, as md
    wrote it, with its unit."""
    if value is None:
        return "–"
    text = str(value)
    if not text.isdigit():
        return f"{text} {unit}"
    if unit == "KiB/s":
        return mb_s(int(text))
    if unit == "KiB" and int(text) >= 1024:
        return f"{int(text) / 1024:g} MiB"
    return f"{text} {unit}"


def megabytes(size: int | None) -> str:
    """Bytes as decimal MB, one decimal (the database's size on the page)."""
    return "–" if size is None else f"{size / 1e6:.1f} MB"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes = int(max(seconds, 0) // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins:02d} min" if hours else f"{mins} min"


CLOCK_FORMAT = "%a %d %b %H:%M"  # static/app.js formats the same way, for its first page only
DAY_FORMAT = "%a %d %b"


def clock(ts: float | None, zone: tzinfo | None = None, form: str = CLOCK_FORMAT) -> str:
    """Wall time in `zone` (else the server's local time), in the page's one format."""
    if ts is None:
        return "–"
    if zone is None:
        return time.strftime(form, time.localtime(ts))
    return datetime.fromtimestamp(ts, zone).strftime(form)


def ratio(value: float) -> str:
    """A speed ratio as people say it: 5, 4.5 (one decimal, none when it is whole)."""
    return f"{value:.1f}".removesuffix(".0")


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def about(seconds: float | None) -> str:
    """How long, as people say it: "about 4 days", "about 9 hours", "about 40 minutes"."""
    if seconds is None:
        return "–"
    if seconds < 90:
        return "about a minute"
    minutes = seconds / 60
    if minutes < 55:
        return f"about {max(5, round(minutes / 5) * 5)} minutes"
    hours = seconds / 3600
    if hours < 1.5:
        return "about an hour"
    if hours < 36:
        return f"about {round(hours)} hours"
    days = seconds / 86400
    if days < 3:  # to half a day: "about 1.5 days", "about 2 days"
        return f"about {ratio(round(days * 2) / 2)} days"
    return f"about {round(days)} days"


# Parts of a day, by the hour they start: what "Fri evening" means.
PARTS_OF_DAY = ((0, "night"), (6, "morning"), (12, "afternoon"), (18, "evening"))


def when(ts: float | None, now: float, zone: tzinfo | None = None) -> str:
    """A time as people plan around it: "tonight", "tomorrow morning", "early Fri";
    further than six days ahead the date ("Tue 08 Dec")."""
    if ts is None:
        return "–"
    at = datetime.fromtimestamp(ts, zone) if zone else datetime.fromtimestamp(ts)
    today = datetime.fromtimestamp(now, zone) if zone else datetime.fromtimestamp(now)
    days = (at.date() - today.date()).days
    if days > 6 or days < 0:
        return at.strftime(DAY_FORMAT)
    part = next(name for hour, name in reversed(PARTS_OF_DAY) if at.hour >= hour)
    if days == 0:
        return "tonight" if part in ("evening", "night") else f"this {part}"
    day = "tomorrow" if days == 1 else at.strftime("%a")
    return f"early {day}" if part == "night" else f"{day} {part}"


def between(low: float | None, high: float | None, now: float, zone: tzinfo | None = None) -> str:
    """A forecast's range in words: "between Fri evening and Tue morning"."""
    first, last = when(low, now, zone), when(high, now, zone)
    return f"around {first}" if first == last else f"between {first} and {last}"


def array_title(name: str, role: str, synology: bool) -> str:
    """ "Storage pool (md2)" on a box with DSM's layout; the kernel's name elsewhere."""
    return f"{SYNOLOGY_TITLES[role]} ({name})" if synology and role in SYNOLOGY_TITLES else name


def drive_name(disk: str) -> str | None:
    """DSM's own name for a disk it calls sataN ("Drive 3"); None for other kernel names."""
    found = DSM_DISK.match(disk)
    return f"Drive {int(found.group(1))}" if found else None
