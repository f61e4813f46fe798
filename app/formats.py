"""Numbers, times and labels as people read them: one formatter each, for the page, the
notifications and the diagnosis's sentences alike (no I/O)."""

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
# Member flags as mdstat prints them (md.c md_seq_show).
FLAG_LABELS = {"F": "faulty", "S": "spare", "W": "write-mostly", "J": "journal", "R": "replacement"}


def mb_s(kb_s: float | None) -> str:
    """KiB/s as decimal MB/s, the unit DSM and the seeds use."""
    return "–" if kb_s is None else f"{kb_s * 1024 / 1e6:.1f} MB/s"


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
