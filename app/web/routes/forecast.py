"""ETAs: one array's running operation, and an SHR pool's arrays reshaping one after another."""

from typing import Any

from fastapi import APIRouter, HTTPException

from app.live import forecasts
from app.store import history
from app.web.deps import BoxDep, ClockDep, DbDep
from app.web.schemas import documents
from app.web.schemas.forecast import ArrayForecast, PoolForecastBody

router = APIRouter(prefix="/api", tags=["forecast"])


@router.get("/arrays/{name}/forecast", responses=documents(ArrayForecast))
def array_forecast(name: str, box: BoxDep, conn: DbDep, clock: ClockDep) -> dict[str, Any]:
    if box.array(name) is None and not history.array_known(conn, name):
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    return forecasts.array_eta(box, conn, name, clock())


@router.get("/pool/forecast", responses=documents(PoolForecastBody))
def pool_forecast(box: BoxDep, clock: ClockDep) -> dict[str, Any]:
    return forecasts.pool_eta(box, clock())
