"""Schedules: daily windows that apply a preset and put the originals back at the end."""

from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from app.shapes import Ok
from app.shapes.tuning import ScheduleAdded, Schedules
from app.store import db
from app.tuning.schedule import scheduler
from app.tuning.schedule.daily import ScheduleError, hhmm
from app.tuning.tuner import Tuner
from app.web import security, views
from app.web.deps import ClockDep, DbDep, RowId, TunerDep, get_snapshot
from app.web.errors import DISK_FULL, error_page, http_error, message_of
from app.web.templating import render_page

router = APIRouter(tags=["schedules"])

PRESET = r"^[a-z][a-z0-9_-]{0,39}$"
# ASCII digits only: \d also takes Arabic-Indic and full-width ones, stored as 07:00.
TIME_OF_DAY = r"^[0-9]{1,2}:[0-9]{2}$"
ZONE = r"^[A-Za-z][A-Za-z0-9_+/-]{0,63}$"  # IANA names: Europe/Berlin, Etc/GMT+5
CHANGES = [Depends(security.same_origin), Depends(security.require_tuner)]


class ScheduleRequest(BaseModel):
    """A daily window: `preset` from `start` to `end` (HH:MM) in `zone` (an IANA name such as
    America/Los_Angeles; unset, the box's time zone)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    preset: str = Field(pattern=PRESET)
    start: str = Field(pattern=TIME_OF_DAY)
    end: str = Field(pattern=TIME_OF_DAY)
    zone: str | None = Field(default=None, pattern=ZONE)


def _add(tuner: Tuner, conn: db.Connection, now: float, body: ScheduleRequest) -> ScheduleAdded:
    found = tuner.presets.get(body.preset)
    if found is None or found.restore_originals:
        usable = ", ".join(n for n, p in tuner.presets.items() if not p.restore_originals)
        message = f"no preset {body.preset!r} to apply (known: {usable})"
        raise HTTPException(422, detail={"message": message})
    try:
        box_zone = tuner.scheduler.zone
        added = scheduler.add(conn, body.preset, body.start, body.end, now, body.zone, box_zone)
    except ScheduleError as error:  # 409 for an overlap or too many, 422 for a bad window
        raise http_error(error) from None
    start, end = hhmm(added.start_minute), hhmm(added.end_minute)
    zone = added.zone or tuner.scheduler.zone_name
    return ScheduleAdded(id=added.id, preset=added.preset, start=start, end=end, zone=zone)


@router.get("/api/schedules")
def list_schedules(tuner: TunerDep, conn: DbDep, clock: ClockDep) -> Schedules:
    """Every schedule, whether its window is open, and the next change in the box's time zone."""
    return tuner.scheduler.view(conn, clock())


@router.post("/api/schedules", status_code=201)
def add_schedule(
    body: ScheduleRequest,
    tuner: TunerDep,
    conn: DbDep,
    clock: ClockDep,
    who: security.TuningChangeDep,
) -> ScheduleAdded:
    return _add(tuner, conn, clock(), body)


@router.delete("/api/schedules/{schedule_id}")
def remove_schedule(
    schedule_id: RowId, conn: DbDep, clock: ClockDep, who: security.TuningChangeDep
) -> Ok:
    """A window this schedule holds open ends at the next tick: the originals go back."""
    if not scheduler.remove(conn, schedule_id, clock()):
        raise HTTPException(404, detail={"message": f"no schedule {schedule_id}"})
    return Ok()


def _panel(
    request: Request, tuner: Tuner, conn: db.Connection, error: str | None, status: int = 422
) -> Response:
    """htmx: the schedule panel; without JS: back to the page, or a page saying what is wrong.
    htmx swaps only a 2xx answer: the panel says a refusal itself."""
    if request.headers.get("hx-request") != "true":
        if error is not None:
            return error_page(status, error)
        return RedirectResponse("/#schedule", status_code=303)
    boost = views.boost_panel(request, tuner, conn, get_snapshot(request), schedule_error=error)
    return render_page(request, "_schedule.html", {"boost": boost})


@router.post("/ui/schedules", include_in_schema=False, dependencies=CHANGES)
def add_schedule_form(
    request: Request,
    tuner: TunerDep,
    conn: DbDep,
    clock: ClockDep,
    preset: Annotated[str, Form(pattern=PRESET)],
    start: Annotated[str, Form(pattern=TIME_OF_DAY)],
    end: Annotated[str, Form(pattern=TIME_OF_DAY)],
    zone: Annotated[str | None, Form(pattern=ZONE)] = None,
) -> Response:
    """From the page: the times are in the zone the page names (the phone's, see the form)."""
    try:
        body = ScheduleRequest(preset=preset, start=start, end=end, zone=zone or None)
        _add(tuner, conn, clock(), body)
        error = None
    except HTTPException as refused:
        error = message_of(refused.detail)
    except db.Error as failed:
        if not db.disk_full(failed):
            raise
        return _panel(request, tuner, conn, DISK_FULL, 503)
    return _panel(request, tuner, conn, error)


@router.post("/ui/schedules/{schedule_id}/remove", include_in_schema=False, dependencies=CHANGES)
def remove_schedule_form(
    request: Request, schedule_id: RowId, tuner: TunerDep, conn: DbDep, clock: ClockDep
) -> Response:
    try:
        scheduler.remove(conn, schedule_id, clock())
    except db.Error as failed:
        if not db.disk_full(failed):
            raise
        return _panel(request, tuner, conn, DISK_FULL, 503)
    return _panel(request, tuner, conn, None)
