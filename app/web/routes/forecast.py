"""ETAs: one array's running operation, and an SHR pool's arrays reshaping one after another."""

from fastapi import APIRouter, HTTPException

from app.live import forecasts
from app.live.forecasts import ArrayForecast, PoolForecastBody
from app.store import history
from app.web.deps import ClockDep, DbDep, SnapshotDep

router = APIRouter(prefix="/api", tags=["forecast"])


# boost_active is left out while nothing runs, as the code sets it.
@router.get("/arrays/{name}/forecast", response_model_exclude_unset=True)
def array_forecast(name: str, snapshot: SnapshotDep, conn: DbDep, clock: ClockDep) -> ArrayForecast:
    if snapshot.array(name) is None and not history.array_known(conn, name):
        raise HTTPException(status_code=404, detail=f"no array named {name[:40]!r}")
    return forecasts.array_eta(snapshot, name, clock())


@router.get("/pool/forecast")
def pool_forecast(snapshot: SnapshotDep, clock: ClockDep) -> PoolForecastBody:
    return forecasts.pool_eta(snapshot, clock())
