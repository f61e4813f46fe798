"""Runs: one resync, recovery, reshape or check of one array, start to finish."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from app.shapes.arrays import RunDetail, Runs
from app.store import history
from app.web.deps import DbDep, RowId

router = APIRouter(prefix="/api/runs", tags=["runs"])


@router.get("")
def list_runs(
    conn: DbDep,
    array: Annotated[str | None, Query(pattern=r"^md\d+$")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Runs:
    return Runs(runs=history.runs(conn, array, limit))


@router.get("/{run_id}")
def get_run(run_id: RowId, conn: DbDep) -> RunDetail:
    detail = history.run(conn, run_id)
    if detail is None:
        raise HTTPException(status_code=404, detail=f"no run {run_id}")
    return detail
