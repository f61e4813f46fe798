"""The dashboard (issue 4): one page of partials; each /ui/* route renders one swappable region."""

import time
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.middleware.gzip import GZipMiddleware
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from app import arrays, eta, history, security, tuning_view
from app.capabilities import HOW_TO_TUNE
from app.deps import ClockDep, DbDep, HostDep
from app.routes.tuning import call, tuner

router = APIRouter(tags=["pages"], include_in_schema=False)

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
PAST_RUNS = 20


def _mb_s(kb_s: float | None) -> str:
    """KiB/s as decimal MB/s, the unit DSM and the seeds use."""
    return "–" if kb_s is None else f"{kb_s * 1024 / 1e6:.1f} MB/s"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes = int(max(seconds, 0) // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {mins:02d} min" if hours else f"{mins} min"


def _clock(ts: float | None) -> str:
    """Server-local wall time; static/app.js rewrites it in the browser's time zone."""
    return "–" if ts is None else time.strftime("%a %d %b %H:%M", time.localtime(ts))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@lru_cache
def _templates(directory: Path) -> Jinja2Templates:
    templates = Jinja2Templates(directory=directory)
    templates.env.filters.update(mb_s=_mb_s, duration=_duration, clock=_clock, iso=_iso)
    templates.env.globals.update(ROLE_LABELS=ROLE_LABELS, ACTION_LABELS=ACTION_LABELS)
    return templates


def render_page(request: Request, name: str, context: dict[str, Any]) -> HTMLResponse:
    templates = _templates(request.app.state.settings.templates_dir)
    return templates.TemplateResponse(request, name, context)


class _Static:
    """/static from settings.static_dir, gzipped: the vendored JS is 262 KB raw, 88 KB gzipped."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _static_app(scope["app"].state.settings.static_dir)(scope, receive, send)


@lru_cache
def _static_app(directory: Path) -> ASGIApp:
    return GZipMiddleware(StaticFiles(directory=directory), minimum_size=1024)


router.mount("/static", _Static(), name="static")


def _card(
    view: dict[str, Any], host: Any, conn: Any, now: float, summaries: dict[int, str]
) -> dict[str, Any]:
    """One array's card: the API's array view plus what the page derives from it."""
    sync = view["sync"] or {}
    running = sync.get("percent") is not None
    run = view["run"]
    finish_min = sync.get("finish_min")
    degraded = bool(view["degraded"] or (view["sysfs"] or {}).get("degraded"))
    return {
        "array": view,
        "sync": sync,
        "running": running,
        "degraded": degraded,
        "missing": (view["status"] or "").count("_"),
        "collapsed": not sync and not degraded and view["state"] == "active",
        "role_label": ROLE_LABELS.get(view["role"], view["role"]),
        "members": [
            {**d, "flag_labels": [FLAG_LABELS.get(f, f) for f in d["flags"]]}
            for d in view["devices"]
        ],
        "elapsed_s": now - run["started"] if run else None,
        "kernel_eta": now + finish_min * 60 if running and finish_min is not None else None,
        "eta": eta.array_eta(conn, host, view["name"], now) if running and run else None,
        "markers": _markers(conn, run["id"], summaries) if run else [],
    }


def _markers(conn: Any, run_id: int, summaries: dict[int, str]) -> list[dict[str, Any]]:
    """Apply/revert events of a run with their measured effect, for the chart and the list."""
    marks = []
    for event in history.events(conn, run_id):
        detail = event["detail"]
        if event["kind"] == "apply":
            label = summaries.get(detail.get("op_id"), f"{detail.get('preset')} applied")
        elif event["kind"] == "revert":
            label = f"reverted ({detail.get('reason', 'requested')})"
        else:
            continue
        marks.append({"ts": event["ts"], "kind": event["kind"], "label": label})
    return marks


def _cards(host: Any, conn: Any, now: float, summaries: dict[int, str]) -> list[dict[str, Any]]:
    """Running first, then degraded, then data before DSM's own arrays; file order otherwise."""
    current = arrays.current(host)
    cards = [
        _card(arrays.array_view(a, host, conn), host, conn, now, summaries) for a in current.arrays
    ]
    return sorted(
        cards,
        key=lambda c: (not c["running"], not c["degraded"], c["array"]["role"] != "data"),
    )


def _past_runs(conn: Any) -> list[dict[str, Any]]:
    past = []
    for run in history.runs(conn, limit=PAST_RUNS):
        presets = [
            e["detail"].get("preset")
            for e in history.events(conn, run["id"])
            if e["kind"] == "apply"
        ]
        past.append({**run, "presets": [p for p in presets if p]})
    return past


def _boost_panel(request: Request, conn: Any, **extra: Any) -> dict[str, Any]:
    """The boost panel's state: GET /api/tuning's shape, plus a plan or an error when given."""
    access = request.app.state.tuning_access
    why = "; ".join(access.problems)
    readonly = None if access.writable else f"Watching only ({why}): {HOW_TO_TUNE}."
    session = security.login_session(request, conn)
    open_demo = request.app.state.settings.demo and not security.password_configured(request, conn)
    return {
        "tuning": tuning_view.status(tuner(request), conn),
        "readonly": readonly,
        "may_change": session is not None or open_demo,
        "open_demo": open_demo,
        "signed_in": session is not None,
        "csrf": session.csrf if session else None,
        **extra,
    }


def _summaries(boost: dict[str, Any]) -> dict[int, str]:
    return {e["op_id"]: e["summary"] for e in boost["tuning"]["effects"]}


def _pool(conn: Any, host: Any, now: float) -> dict[str, Any] | None:
    """The pool view, when one job spans several arrays (an SHR expansion); else None."""
    pool = eta.pool_eta(conn, host, now)
    return pool if len(pool["arrays"]) > 1 else None


def _page(request: Request, host: Any, conn: Any, now: float, boost: dict[str, Any]) -> Response:
    context = {
        "now": now,
        "demo": request.app.state.settings.demo,
        "cards": _cards(host, conn, now, _summaries(boost)),
        "pool": _pool(conn, host, now),
        "runs": _past_runs(conn),
        "boost": boost,
    }
    return render_page(request, "index.html", context)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, host: HostDep, conn: DbDep, clock: ClockDep) -> Response:
    return _page(request, host, conn, clock(), _boost_panel(request, conn))


@router.get("/ui/arrays/{name}", response_class=HTMLResponse)
def array_card(
    name: str, request: Request, host: HostDep, conn: DbDep, clock: ClockDep
) -> HTMLResponse:
    """The polled card of one array: it carries its own hx-trigger only while an operation runs."""
    array = arrays.current(host).array(name)
    if array is None:
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    summaries = _summaries(_boost_panel(request, conn))
    card = _card(arrays.array_view(array, host, conn), host, conn, clock(), summaries)
    return render_page(request, "_array.html", {"card": card})


def same_origin(request: Request) -> None:
    """Refuse cross-site form posts: a page elsewhere must not flip kernel knobs on the LAN."""
    origin = request.headers.get("origin")
    if request.headers.get("sec-fetch-site") == "cross-site" or (
        origin and origin.split("://", 1)[-1] != request.headers.get("host")
    ):
        raise HTTPException(status_code=403, detail="cross-site request refused")


def _after_post(
    request: Request, host: Any, conn: Any, now: float, boost: dict[str, Any]
) -> Response:
    """htmx: the boost panel plus the chart markers out of band; without JS: the whole page."""
    if request.headers.get("hx-request") != "true":
        if boost.get("plan") or boost.get("error"):
            return _page(request, host, conn, now, boost)
        return RedirectResponse("/#boost", status_code=303)
    return _boost_fragment(request, host, conn, now, boost)


def _boost_fragment(
    request: Request, host: Any, conn: Any, now: float, boost: dict[str, Any]
) -> Response:
    """The panel, plus out-of-band the chart markers and past runs that an apply or revert moves."""
    cards = [c for c in _cards(host, conn, now, _summaries(boost)) if c["array"]["run"]]
    context = {"boost": boost, "oob_cards": cards, "runs": _past_runs(conn)}
    return render_page(request, "_boost.html", context)


def _attempt(action: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Run one tuning action: (its result, None) or (None, its error: busy, refused, invalid)."""
    try:
        return call(action), None
    except HTTPException as error:
        detail = error.detail
        return None, str(detail.get("message", detail) if isinstance(detail, dict) else detail)


@router.get("/ui/boost", response_class=HTMLResponse)
def boost_panel(request: Request, host: HostDep, conn: DbDep, clock: ClockDep) -> Response:
    """Polled while an apply or revert runs or an effect is still being measured."""
    return _boost_fragment(request, host, conn, clock(), _boost_panel(request, conn))


@router.post(
    "/ui/boost/plan",
    response_class=HTMLResponse,
    dependencies=[Depends(same_origin), Depends(security.require_admin)],
)
def boost_plan(request: Request, host: HostDep, conn: DbDep, clock: ClockDep) -> Response:
    """What boost would change and its RAM cost, to confirm before anything is written."""
    plan, error = _attempt(lambda: tuner(request).plan("boost").to_json())
    boost = _boost_panel(request, conn, plan=plan, error=error)
    return _after_post(request, host, conn, clock(), boost)


@router.post(
    "/ui/boost",
    response_class=HTMLResponse,
    dependencies=[Depends(same_origin), Depends(security.require_admin)],
)
def boost_switch(
    request: Request, host: HostDep, conn: DbDep, clock: ClockDep, on: Annotated[bool, Form()]
) -> Response:
    """The toggle: on applies the boost preset, off reverts to the journaled originals."""
    found = tuner(request)
    _, error = _attempt(
        (lambda: found.apply("boost", None)) if on else (lambda: found.revert("boost switched off"))
    )
    return _after_post(request, host, conn, clock(), _boost_panel(request, conn, error=error))


@router.post(
    "/ui/revert",
    response_class=HTMLResponse,
    dependencies=[Depends(same_origin), Depends(security.require_admin)],
)
def revert(request: Request, host: HostDep, conn: DbDep, clock: ClockDep) -> Response:
    _, error = _attempt(lambda: tuner(request).revert("requested"))
    return _after_post(request, host, conn, clock(), _boost_panel(request, conn, error=error))
