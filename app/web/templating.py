"""The Jinja environment with its formatters and labels, render_page(), and the /static files."""

import asyncio
import gzip
from datetime import tzinfo
from functools import lru_cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast
from app.formats import (
    ACTION_LABELS,
    DAY_FORMAT,
    KNOB_WORDS,
    PRESET_DONE,
    RANGE_ODDS,
    ROLE_LABELS,
    about,
    between,
    clock,
    duration,
    iso,
    knob_amount,
    mb_s,
    megabytes,
    plan_outcome,
    ratio,
)
from app.web.deps import get_clock, get_settings, get_tuner

# The browser's IANA zone, set by static/app.js, so that times are rendered once in their final
# form and never rewritten on the page (a rewrite would change their width).
ZONE_COOKIE = "tz"


@lru_cache(maxsize=64)
def _zone(name: str) -> tzinfo | None:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        return None


def page_zone(request: Request) -> tuple[tzinfo, str]:
    """The zone the page shows, with the name it says: the browser's when it told us (the
    owner's phone), else the box's (TZ, else /etc/localtime), the one schedules use too."""
    name = request.cookies.get(ZONE_COOKIE)
    if name and len(name) <= 64 and (zone := _zone(name)) is not None:
        return zone, name
    scheduler = get_tuner(request).scheduler
    return scheduler.zone, scheduler.zone_name


def zone_of(request: Request) -> tzinfo:
    return page_zone(request)[0]


def zone_name(request: Request) -> str:
    return page_zone(request)[1]


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


@pass_context
def _page_between(context: Context, fc: Forecast | PoolForecast) -> str:
    """The `between` filter: a forecast's range in words ("between Fri evening and Tue
    morning"), from the page's `now`, in the browser's zone."""
    request = context.get("request")
    zone = zone_of(request) if request is not None else None
    return between(fc.low, fc.high, context["now"], zone)


@pass_context
def _page_about(context: Context, ts: float | None) -> str:
    """The `about` filter: how long until `ts` from the page's `now` ("about 4 days")."""
    return about(ts - context["now"] if ts is not None else None)


@lru_cache
def _templates(directory: Path) -> Jinja2Templates:
    templates = Jinja2Templates(directory=directory)
    templates.env.filters.update(
        mb_s=mb_s,
        duration=duration,
        clock=_page_clock,
        day=_page_day,
        iso=iso,
        ratio=ratio,
        about=_page_about,
        between=_page_between,
        megabytes=megabytes,
        knob_amount=knob_amount,
    )
    templates.env.globals.update(
        ROLE_LABELS=ROLE_LABELS,
        ACTION_LABELS=ACTION_LABELS,
        PRESET_DONE=PRESET_DONE,
        KNOB_WORDS=KNOB_WORDS,
        RANGE_ODDS=RANGE_ODDS,
        plan_outcome=plan_outcome,
        zone_name=zone_name,
    )
    return templates


def render_page(request: Request, name: str, context: dict[str, Any]) -> HTMLResponse:
    """`now` is the time of this response unless the route gave one (the page's "as of")."""
    templates = _templates(get_settings(request).templates_dir)
    context = {"now": get_clock(request)(), **context}
    return templates.TemplateResponse(request, name, context)


@lru_cache
def _static_app(directory: Path) -> ASGIApp:
    return CompressedOnce(StaticFiles(directory=directory))


class Static:
    """/static from settings.static_dir, gzipped: the vendored JS is 262 KB raw, 88 KB gzipped."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _static_app(scope["app"].state.settings.static_dir)(scope, receive, send)


GZIP_MIN_BYTES = 1024


class CompressedOnce:
    """Files gzipped once per version (their ETag), in a worker thread: a gzip per request on
    the event loop (GZipMiddleware) made the 1.7 MB Swagger bundle, asked for from a few
    addresses at once, hold every other request up for seconds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gzipped: dict[tuple[str, bytes], bytes] = {}  # (path, ETag) -> gzipped file

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        accepts = dict(scope.get("headers", [])).get(b"accept-encoding", b"")
        if scope["type"] != "http" or b"gzip" not in accepts or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def compress(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                etag = headers.get(b"etag")
                size = int(headers.get(b"content-length", b"0") or 0)
                if message["status"] != 200 or etag is None or size < GZIP_MIN_BYTES:
                    await send(message)
                    return
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            headers = dict(start["headers"])
            key = (scope["path"], headers[b"etag"])
            body = self.gzipped.get(key)
            if body is None:
                body = await asyncio.to_thread(gzip.compress, b"".join(chunks), 6)
                self.gzipped[key] = body
            headers |= {
                b"content-encoding": b"gzip",
                b"content-length": str(len(body)).encode(),
                b"vary": b"Accept-Encoding",
            }
            await send({**start, "headers": list(headers.items())})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, compress)
