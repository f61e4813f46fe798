"""The Jinja environment with its formatters and labels, render_page(), and the /static files."""

import time
from datetime import datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from starlette.middleware.gzip import GZipMiddleware
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

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


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes = int(max(seconds, 0) // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins:02d} min" if hours else f"{mins} min"


# The browser's IANA zone, set by static/app.js, so that times are rendered once in their final
# form and never rewritten on the page (issue 14 item 4).
ZONE_COOKIE = "tz"
CLOCK_FORMAT = "%a %d %b %H:%M"  # static/app.js formats the same way, for its first page only
DAY_FORMAT = "%a %d %b"


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo | None:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        return None


def zone_of(request: Request) -> tzinfo | None:
    """The browser's zone when it told us, else the box's TZ, else the server's local time."""
    for name in (request.cookies.get(ZONE_COOKIE), request.app.state.settings.tz):
        if name and len(name) <= 64 and (zone := _zone(name)) is not None:
            return zone
    return None


def zone_name(request: Request) -> str:
    zone = zone_of(request)
    return str(zone) if zone is not None else ""


def clock(ts: float | None, zone: tzinfo | None = None, form: str = CLOCK_FORMAT) -> str:
    """Wall time in `zone` (else the server's local time), in the page's one format."""
    if ts is None:
        return "–"
    if zone is None:
        return time.strftime(form, time.localtime(ts))
    return datetime.fromtimestamp(ts, zone).strftime(form)


@pass_context
def _page_clock(context: Context, ts: float | None) -> str:
    """The `clock` filter: in the browser's zone (see zone_of)."""
    request = context.get("request")
    return clock(ts, zone_of(request) if request is not None else None)


@pass_context
def _page_day(context: Context, ts: float | None) -> str:
    """The `day` filter: "Sat 28 Nov" in the browser's zone."""
    request = context.get("request")
    return clock(ts, zone_of(request) if request is not None else None, DAY_FORMAT)


def ratio(value: float) -> str:
    """A speed ratio as people say it: 5, 4.5 (one decimal, none when it is whole)."""
    return f"{value:.1f}".removesuffix(".0")


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@lru_cache
def _templates(directory: Path) -> Jinja2Templates:
    templates = Jinja2Templates(directory=directory)
    templates.env.filters.update(
        mb_s=mb_s, duration=duration, clock=_page_clock, day=_page_day, iso=iso, ratio=ratio
    )
    templates.env.globals.update(
        ROLE_LABELS=ROLE_LABELS,
        ACTION_LABELS=ACTION_LABELS,
        PRESET_DONE=PRESET_DONE,
        zone_name=zone_name,
    )
    return templates


def render_page(request: Request, name: str, context: dict[str, Any]) -> HTMLResponse:
    """`now` is the time of this response unless the route gave one (the page's "as of")."""
    templates = _templates(request.app.state.settings.templates_dir)
    context = {"now": request.app.state.clock(), **context}
    return templates.TemplateResponse(request, name, context)


class Static:
    """/static from settings.static_dir, gzipped: the vendored JS is 262 KB raw, 88 KB gzipped."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _static_app(scope["app"].state.settings.static_dir)(scope, receive, send)


@lru_cache
def _static_app(directory: Path) -> ASGIApp:
    return GZipMiddleware(StaticFiles(directory=directory), minimum_size=1024)
