"""The dashboard: one page of partials; each /ui/* route renders one swappable region."""

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.live.forecasts import PoolForecastBody
from app.live.snapshot import Snapshot
from app.store import db
from app.web import change_planning, plan_kept, security, views
from app.web.deps import (
    ClockDep,
    DbDep,
    RowId,
    SnapshotBuilderDep,
    SnapshotDep,
    TunerDep,
    get_moved_aside,
    get_sampler,
    get_settings,
    get_tuner,
)
from app.web.errors import call_tuning, message_of
from app.web.headline import Headline, headline
from app.web.templating import Static, render_page

router = APIRouter(tags=["pages"], include_in_schema=False)
router.mount("/static", Static(), name="static")

CHANGES = [Depends(security.same_origin), Depends(security.require_tuner)]
# What a change did, said in the panel right after it; without JS the redirect
# carries the key, so the page never echoes text from the address.
DONE = {
    "boost-on": "Boost is on: the table shows each setting as the kernel read it back.",
    "boost-off": "Boost is off: every setting mdboost changed holds its original value again.",
    "reverted": "Reverted: every setting mdboost changed holds its original value again.",
    "autotune": "Auto-tune started: it measures each setting a few minutes, then keeps the best.",
}


@dataclass(frozen=True)
class Regions:
    """What an apply or revert changes on the page: the cards, the pool, past runs, the boost
    panel and the sentence that sums them up."""

    cards: list[views.ArrayCard]
    pool: PoolForecastBody | None
    runs: list[views.PastRun]
    boost: views.BoostPanel
    headline: Headline

    def context(self) -> dict[str, object]:
        """The regions as the templates name them."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _page(
    request: Request,
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    boost: views.BoostPanel,
) -> Response:
    context = {
        "now": now,
        "demo": get_settings(request).demo,
        "plan_section": change_planning.section(snapshot, conn, now),
        "database": views.database_status(
            get_settings(request),
            get_sampler(request),
            get_moved_aside(request),
            get_tuner(request).recovery,
        ),
    }
    # The no-JS picture: only whole pages carry the chart.
    regions = _regions(snapshot, conn, now, boost, pictures=True)
    return render_page(request, "index.html", {**context, **regions.context()})


def _regions(
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    boost: views.BoostPanel,
    all_runs: bool = True,
    pictures: bool = False,
) -> Regions:
    """The cards, the pool, past runs, the boost panel and the sentence that sums them up.
    Without `all_runs` (a card's poll), past runs are read only when nothing runs: then the
    sentence names the last one."""
    cards = views.cards(snapshot, conn, now, boost, pictures)
    idle = not any(c.running for c in cards)
    pool, runs = views.pool(snapshot, now), views.past_runs(conn, cards) if all_runs or idle else []
    return Regions(cards, pool, runs, boost, headline(cards, pool, boost, runs))


def _boost_fragment(
    request: Request,
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    boost: views.BoostPanel,
) -> Response:
    """The panel, plus out-of-band the chart markers, past runs and the sentence that an apply
    or revert changes."""
    regions = _regions(snapshot, conn, now, boost)
    context = {name: value for name, value in regions.context().items() if name != "cards"}
    context["oob_cards"] = [c for c in regions.cards if c.chart]
    return render_page(request, "_boost.html", context)


def _after_post(
    request: Request,
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    boost: views.BoostPanel,
    done: str | None = None,
) -> Response:
    """htmx: the boost panel plus the chart markers out of band; without JS: the whole page.
    `done` (a DONE key) acknowledges a change that worked."""
    if done is not None and not boost.error:
        boost = replace(boost, done=DONE[done])
    if request.headers.get("hx-request") != "true":
        if boost.plan or boost.error:
            return _page(request, snapshot, conn, now, boost)
        return RedirectResponse(f"/?done={done}#boost" if done else "/#boost", status_code=303)
    return _boost_fragment(request, snapshot, conn, now, boost)


T = TypeVar("T")


def _attempt(action: Callable[[], T]) -> tuple[T | None, str | None]:
    """Run one tuning action: (its result, None) or (None, its error: busy, refused, invalid)."""
    try:
        return call_tuning(action), None
    except HTTPException as error:
        return None, message_of(error.detail)


@router.get("/", response_class=HTMLResponse)
def index(
    request: Request, snapshot: SnapshotDep, conn: DbDep, clock: ClockDep, tuner: TunerDep
) -> Response:
    if security.first_visit_before_set_up(request, conn):
        return RedirectResponse("/setup", status_code=303)
    done = DONE.get(request.query_params.get("done") or "")
    boost = replace(views.boost_panel(request, tuner, conn, snapshot), done=done)
    return _page(request, snapshot, conn, clock(), boost)


@router.get("/ui/arrays/{name}", response_class=HTMLResponse)
def array_card(
    name: str,
    request: Request,
    snapshot: SnapshotDep,
    conn: DbDep,
    clock: ClockDep,
    tuner: TunerDep,
) -> HTMLResponse:
    """The polled card of one array: it carries its own hx-trigger only while an operation runs."""
    if snapshot.array(name) is None:
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    boost = views.boost_panel(request, tuner, conn, snapshot)
    regions = _regions(snapshot, conn, clock(), boost, all_runs=False)
    card = next(c for c in regions.cards if c.array.name == name)
    context = {
        "card": card,
        "headline": regions.headline,
        "pool": regions.pool,
        "boost": boost,
    }
    return render_page(request, "_array.html", context)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def past_run(
    run_id: RowId, request: Request, snapshot: SnapshotDep, conn: DbDep, tuner: TunerDep
) -> HTMLResponse:
    """One run: how it ended, its chart and its tuning changes."""
    found = views.past_run(tuner, conn, run_id)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no run {run_id}")
    context = {
        "run": found.past.run,
        "past": found.past,
        "chart": found.chart,
        "plan": plan_kept.beside(snapshot, conn, found.past.run),
    }
    return render_page(request, "run.html", context)


@router.get("/ui/boost", response_class=HTMLResponse)
def boost_panel(
    request: Request, snapshot: SnapshotDep, conn: DbDep, clock: ClockDep, tuner: TunerDep
) -> Response:
    """Polled while an apply or revert runs or an effect is still being measured."""
    boost = views.boost_panel(request, tuner, conn, snapshot)
    return _boost_fragment(request, snapshot, conn, clock(), boost)


@router.post("/ui/boost/plan", response_class=HTMLResponse, dependencies=CHANGES)
def boost_plan(
    request: Request, snapshot: SnapshotDep, conn: DbDep, clock: ClockDep, tuner: TunerDep
) -> Response:
    """What boost would change and its RAM cost, to confirm before anything is written."""
    plan, error = _attempt(lambda: tuner.plan("boost").shape())
    boost = views.boost_panel(request, tuner, conn, snapshot, plan, error)
    return _after_post(request, snapshot, conn, clock(), boost)


@router.post("/ui/boost", response_class=HTMLResponse, dependencies=CHANGES)
def boost_switch(
    request: Request,
    snapshot_builder: SnapshotBuilderDep,
    conn: DbDep,
    clock: ClockDep,
    tuner: TunerDep,
    switch: Annotated[Literal["true", "false"], Form(alias="on")],
) -> Response:
    """The toggle: on applies the boost preset, off reverts to the journaled originals. The
    answer reads the present after the write, which holds the write's own read-back. Only the
    page's own "true" and "false": "yes" or "1" is a 422, as in the API."""
    on = switch == "true"
    _, error = _attempt(
        (lambda: tuner.apply("boost", None)) if on else (lambda: tuner.revert("boost switched off"))
    )
    snapshot = snapshot_builder.snapshot
    boost = views.boost_panel(request, tuner, conn, snapshot, error=error)
    return _after_post(request, snapshot, conn, clock(), boost, "boost-on" if on else "boost-off")


@router.post("/ui/autotune", response_class=HTMLResponse, dependencies=CHANGES)
def autotune(
    request: Request,
    snapshot_builder: SnapshotBuilderDep,
    conn: DbDep,
    clock: ClockDep,
    tuner: TunerDep,
) -> Response:
    """Start a sweep on the running sync; the panel then polls while it measures."""
    _, error = _attempt(lambda: tuner.autotune(None))
    snapshot = snapshot_builder.snapshot
    boost = views.boost_panel(request, tuner, conn, snapshot, error=error)
    return _after_post(request, snapshot, conn, clock(), boost, "autotune")


@router.post("/ui/revert", response_class=HTMLResponse, dependencies=CHANGES)
def revert(
    request: Request,
    snapshot_builder: SnapshotBuilderDep,
    conn: DbDep,
    clock: ClockDep,
    tuner: TunerDep,
) -> Response:
    _, error = _attempt(lambda: tuner.revert("requested"))
    snapshot = snapshot_builder.snapshot
    boost = views.boost_panel(request, tuner, conn, snapshot, error=error)
    return _after_post(request, snapshot, conn, clock(), boost, "reverted")
