"""An SHR pool's job as one finish time: its arrays reshape (or rebuild) one after another on
the same disks, so the job ends when the running phase's forecast ends plus each phase still to
come at the same disks' pace, each with its own size and knee (pure)."""

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from app.forecast.model import Forecast, Status
from app.forecast.physics import KNEE_SPEEDUP, Limits, seconds_left

# done: ended in this job; running: md syncs it now; queued: md holds it back (resync=DELAYED);
# coming: idle now, but the running phase leaves it a step to take (a tier the new disk reaches).
PhaseState = Literal["done", "running", "queued", "coming"]


@dataclass(frozen=True)
class PoolMember:
    """One phase of the pool's job: an array reshaped already, reshaping now, or waiting."""

    name: str
    state: PhaseState
    size_blocks: int | None = None  # array size from mdstat, to scale a phase's time
    forecast: Forecast | None = None  # for the running array
    # What md will count for this phase, in the running phase's own units (1 KiB blocks of its
    # (done/total)), and a grow's knee: a phase to come is timed from these when known.
    work_blocks: int | None = None
    knee: float | None = None


@dataclass(frozen=True)
class PhaseFinish:
    """When one phase of the job ends: the running one's forecast, or its turn at that pace."""

    name: str
    state: PhaseState
    eta: float | None = None  # unix seconds
    low: float | None = None
    high: float | None = None


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
    finishes: list[PhaseFinish] = field(default_factory=list)  # each phase's end, in order
    settling: bool = False  # the running phase's finish is a first estimate after a knob change

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pool_forecast(
    members: Sequence[PoolMember], knee_speedup: float = KNEE_SPEEDUP
) -> PoolForecast:
    """The job's finish: the running phase's forecast, then each phase to come in turn at the
    running phase's pace before its knee (the same disks), past its own knee `knee_speedup`
    times faster unless md's max holds the pace; its range scales as the running one's."""
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
    finishes = [PhaseFinish(m.name, m.state) for m in members[:index]]
    finishes.append(PhaseFinish(current.name, "running", eta, low, high))
    # A phase to come is as uncertain as the running one's remainder (same disks, knee).
    left = max(eta - fc.as_of, 1e-9)
    low_ratio, high_ratio = (low - fc.as_of) / left, (high - fc.as_of) / left
    for member in members[index + 1 :]:
        if member.state == "done":
            finishes.append(PhaseFinish(member.name, "done"))
            continue
        turn = _turn_s(fc, current, member, knee_speedup)
        if turn is None:
            return replace(base, reason=f"{member.name}: size unknown, cannot plan its turn")
        eta += turn
        low += turn * low_ratio
        high += turn * high_ratio
        finishes.append(PhaseFinish(member.name, member.state, eta, low, high))
    # The job's finish is as settled as the running phase's: right after a knob change the
    # page labels it a first estimate, whichever of the two it shows.
    settled = replace(base, status="ok", eta=eta, low=low, high=high, finishes=finishes)
    return replace(settled, settling=True, reason=fc.reason) if fc.settling else settled


def _turn_s(
    fc: Forecast, current: PoolMember, member: PoolMember, knee_speedup: float
) -> float | None:
    """Seconds `member`'s phase takes at the running phase's pace: before its knee at the
    running phase's pace before its own, past it as much faster as the running phase's knee
    made it (measured once past it, else the model's `knee_speedup`)."""
    speed = fc.speed_blocks_s
    if member.work_blocks and speed:
        held = fc.bound == "max limit"
        if not held and fc.pace_before_knee:
            speed, knee_speedup = fc.pace_before_knee, max(speed / fc.pace_before_knee, 1.0)
        knee = None if held else member.knee
        return seconds_left(speed, 0.0, knee, knee_speedup, Limits(), member.work_blocks)
    # Without its work: the running phase's whole run scaled by the arrays' sizes.
    if fc.whole_run_s is None or not member.size_blocks or not current.size_blocks:
        return None
    return fc.whole_run_s * member.size_blocks / current.size_blocks
