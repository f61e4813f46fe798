"""Bodies of the forecasts: one array's run, and an SHR pool's arrays one after another."""

from app.forecast.boost import BoostEstimate
from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast
from app.web.schemas import Body


class ArrayForecast(Body):
    array: str
    run_id: int | None
    action: str | None
    now: float
    forecast: Forecast
    eta_in_s: float | None
    boost: BoostEstimate | None  # the finish if boost were applied now
    boost_active: bool | None = None  # a preset is applied; absent while nothing runs


class PoolArray(Body):
    name: str
    state: str  # running | queued | done
    forecast: Forecast | None


class PoolForecastBody(Body):
    now: float
    pool: PoolForecast
    eta_in_s: float | None
    arrays: list[PoolArray]
