"""Plan a change before it starts: POST /api/plan and the page's section."""

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from app.planner.change import BadChange
from app.shapes.change_plan import MAX_DISK_BYTES, PlanBody, PlanRequest
from app.web import change_planning
from app.web.deps import ClockDep, DbDep, SnapshotDep
from app.web.templating import render_page

router = APIRouter(tags=["plan"])


@router.post("/api/plan", response_model=PlanBody)
def plan_change(body: PlanRequest, snapshot: SnapshotDep, conn: DbDep, clock: ClockDep) -> PlanBody:
    """How long adding or replacing a disk would take, and the capacity before and after.
    Changes nothing."""
    asked = change_planning.ChangeRequest(body.change, body.disk_bytes, body.member)
    try:
        plan = change_planning.plan_requested_change(snapshot, conn, asked, clock())
    except BadChange as error:
        raise HTTPException(status_code=422, detail=str(error)) from error
    return change_planning.shape(plan)


@router.get("/ui/plan", response_class=HTMLResponse, include_in_schema=False)
def plan_section(
    request: Request,
    snapshot: SnapshotDep,
    conn: DbDep,
    clock: ClockDep,
    change: Literal["add", "replace"] = "add",
    disk_tb: Annotated[float | None, Query(gt=0, le=MAX_DISK_BYTES / 1e12)] = None,
    # the form sends an empty member for an add
    member: Annotated[str | None, Query(max_length=32, pattern=r"^([a-z][a-z0-9_-]*)?$")] = None,
) -> HTMLResponse:
    """The page's "Plan a change" section, with the plan asked for (a GET: it changes nothing)."""
    context = change_planning.section(snapshot, conn, clock(), change, disk_tb, member or None)
    return render_page(request, "_plan.html", {"plan_section": context})
