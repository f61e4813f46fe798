"""An SHR pool as one job: the running array's forecast plus each queued array's turn."""

import pytest

from app.forecast.model import RunProgress
from app.forecast.pool import PoolMember, pool_forecast

T0 = 1_700_000_000.0
TOTAL = 10_000_000


def steady_forecast(seconds: float, speed: float):  # type: ignore[no-untyped-def]
    run = RunProgress()
    for i in range(int(seconds // 10) + 1):
        run.add(T0 + i * 10, int(i * 10 * speed), TOTAL)
    return run.forecast()


def test_pool_adds_queued_arrays_at_the_running_pace() -> None:
    fc = steady_forecast(3600, 1000)
    members = [
        PoolMember("md2", "done", 2 * TOTAL),
        PoolMember("md3", "running", TOTAL, fc),
        PoolMember("md4", "queued", TOTAL // 2),
    ]
    pool = pool_forecast(members)
    assert pool.status == "ok" and pool.phase == 2 and pool.phases == 3
    assert pool.eta == pytest.approx(fc.eta + TOTAL / 1000 / 2)  # type: ignore[operator]
    assert pool.low < pool.eta < pool.high  # type: ignore[operator]
    assert pool_forecast([PoolMember("md2", "done")]).status == "done"
    idle = pool_forecast([PoolMember("md2", "queued", TOTAL)])
    assert idle.status == "insufficient" and idle.eta is None
