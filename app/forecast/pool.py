"""An SHR pool as one job: its arrays reshape one after another on the same disks, so the pool
finishes when the running array's forecast ends plus each queued array's turn at the same pace."""

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from app.forecast.model import Forecast, Status


@dataclass(frozen=True)
class PoolMember:
    """One array of an SHR pool: reshaped already, reshaping now, or waiting its turn."""

    name: str
    state: Literal["done", "running", "queued"]
    size_blocks: int | None = None  # array size from mdstat, to scale a queued array's time
    forecast: Forecast | None = None  # for the running array


@dataclass(frozen=True)
class PoolForecast:
    status: Status
    reason: str | None = None
    eta: float | None = None
    low: float | None = None
    high: float | None = None
    phase: int | None = None  # 1-based number of the running array
    phases: int = 0
    members: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pool_forecast(members: Sequence[PoolMember]) -> PoolForecast:
    """An SHR pool's finish: the running array's forecast, then each queued array in turn at the
    running array's pace scaled by size (its arrays share the same disks)."""
    names = [m.name for m in members]
    running = [i for i, m in enumerate(members) if m.state == "running"]
    if not running:
        if members and all(m.state == "done" for m in members):
            return PoolForecast("done", None, phases=len(members), members=names)
        return PoolForecast("insufficient", "no array of the pool is reshaping", members=names)
    index = running[0]
    current = members[index]
    fc = current.forecast
    base = PoolForecast("insufficient", phase=index + 1, phases=len(members), members=names)
    if fc is None or fc.status not in ("ok", "settling") or fc.eta is None or fc.as_of is None:
        status: Status = fc.status if fc is not None else "insufficient"
        reason = f"{current.name}: {fc.reason if fc is not None else 'no forecast'}"
        return replace(base, status=status, reason=reason)
    eta, low, high = fc.eta, fc.low or fc.eta, fc.high or fc.eta
    whole_run_s = fc.whole_run_s
    # A queued array's turn is as uncertain as the running one's remainder (same disks, knee).
    left = max(eta - fc.as_of, 1e-9)
    low_ratio, high_ratio = (low - fc.as_of) / left, (high - fc.as_of) / left
    for member in members[index + 1 :]:
        if member.state == "done":
            continue
        if whole_run_s is None or not member.size_blocks or not current.size_blocks:
            return replace(base, reason=f"{member.name}: size unknown, cannot plan its turn")
        share = member.size_blocks / current.size_blocks
        eta += whole_run_s * share
        low += whole_run_s * share * low_ratio
        high += whole_run_s * share * high_ratio
    return replace(base, status="ok", eta=eta, low=low, high=high)
