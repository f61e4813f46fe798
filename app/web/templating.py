"""The Jinja environment with its formatters and labels, render_page(), and the /static files."""

import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
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


def clock(ts: float | None) -> str:
    """Server-local wall time; static/app.js rewrites it in the browser's time zone."""
    return "–" if ts is None else time.strftime("%a %d %b %H:%M", time.localtime(ts))


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@lru_cache
def _templates(directory: Path) -> Jinja2Templates:
    templates = Jinja2Templates(directory=directory)
    templates.env.filters.update(mb_s=mb_s, duration=duration, clock=clock, iso=iso)
    templates.env.globals.update(ROLE_LABELS=ROLE_LABELS, ACTION_LABELS=ACTION_LABELS)
    return templates


def render_page(request: Request, name: str, context: dict[str, Any]) -> HTMLResponse:
    templates = _templates(request.app.state.settings.templates_dir)
    return templates.TemplateResponse(request, name, context)


class Static:
    """/static from settings.static_dir, gzipped: the vendored JS is 262 KB raw, 88 KB gzipped."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _static_app(scope["app"].state.settings.static_dir)(scope, receive, send)


@lru_cache
def _static_app(directory: Path) -> ASGIApp:
    return GZipMiddleware(StaticFiles(directory=directory), minimum_size=1024)
