"""ETAs: one array's running operation, and an SHR pool's arrays reshaping one after another."""

from typing import Any

from fastapi import APIRouter, HTTPException

from app.forecast import service
from app.live import arrays
from app.store import history
from app.web.deps import ClockDep, DbDep, HostDep

router = APIRouter(prefix="/api", tags=["forecast"])


@router.get("/arrays/{name}/forecast")
def array_forecast(name: str, host: HostDep, conn: DbDep, clock: ClockDep) -> dict[str, Any]:
    if arrays.current(host).array(name) is None and not history.array_known(conn, name):
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    return service.array_eta(conn, host, name, clock())


@router.get("/pool/forecast")
def pool_forecast(host: HostDep, conn: DbDep, clock: ClockDep) -> dict[str, Any]:
    return service.pool_eta(conn, host, clock())
