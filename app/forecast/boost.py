"""What if I boost: the forecast if the boost preset were applied now, always an estimate."""

from dataclasses import asdict, dataclass
from typing import Any, Literal

from app.forecast.model import Forecast
from app.forecast.physics import FREED_RANGE, FREED_SPEEDUP

# "What if I boost" without a measured effect: disk-bound, the real-kernel stripe-cache figure
# (16384 on HDD-like disks: 1.40x over 256); limit-bound, up to the boost's new max.
MODEL_BOOST_RATIO = 1.4
MODEL_BOOST_RANGE = (1.0, 2.0)
LIMIT_BOOST_CAP = 5.0  # the seeds' best measured boost
MEASURED_BOOST_SPREAD = 0.15
# Below this gain boost is not offered: the page says it would not help (issue 25).
NO_GAIN = 1.05


@dataclass(frozen=True)
class BoostEstimate:
    """The forecast if the boost preset were applied now: always an estimate."""

    eta: float | None
    low: float | None
    high: float | None
    ratio: float  # speed with the boost / speed now
    source: Literal["measured", "limit", "model"]
    label: str = "estimate"
    why: str = ""
    helps: bool = True  # False: boost would not speed this run up (eta is then None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def boost_forecast(
    current: Forecast,
    measured_ratio: float | None = None,
    boost_max: float | None = None,
    measured_on: str = "this array",
    untuned_speed: float | None = None,
) -> BoostEstimate | None:
    """The forecast if the boost preset were applied now.

    From the measured effect of past boosts when there is one (this array's, or, named by
    `measured_on`, a sibling's in the same SHR pool; speed with the boost / speed without, from
    the tuning journal); otherwise from the physics: a run held by its max
    goes at most up to the boost's new max (`boost_max`, KiB/s), a disk-bound one by the real
    kernel's stripe-cache figure. Each of these is a gain over the untuned pace: while another
    preset holds the run (auto-tune), `untuned_speed` (blocks/s before it) scales it to the pace
    now. None when the current forecast has no number to scale.
    """
    eta, low, high, now = current.eta, current.low, current.high, current.as_of
    speed = current.speed_blocks_s
    if current.status not in ("ok", "settling"):
        return None
    if eta is None or low is None or high is None or now is None or speed is None:
        return None
    source: Literal["measured", "limit", "model"]
    if measured_ratio is not None and measured_ratio > 0:
        ratio, source = measured_ratio, "measured"
        slow, fast = ratio / (1 + MEASURED_BOOST_SPREAD), ratio * (1 + MEASURED_BOOST_SPREAD)
        why = f"it measured ×{ratio:.1f} on {measured_on}"
    elif current.bound == "max limit" and boost_max is not None and boost_max > speed:
        ceiling = min(boost_max / speed, LIMIT_BOOST_CAP)
        ratio, source = min(FREED_SPEEDUP, ceiling), "limit"
        slow, fast = FREED_RANGE[0], max(ratio, min(FREED_RANGE[1], ceiling))
        why = "held by the max speed limit: boost raises it, and the disks decide how far"
    else:
        ratio, source = MODEL_BOOST_RATIO, "model"
        slow, fast = MODEL_BOOST_RANGE
        why = "disk-bound: a larger stripe cache gave x1.4 on a real kernel's HDD-like disks"
    if untuned_speed is not None:
        scale = untuned_speed / speed
        ratio, slow, fast = ratio * scale, slow * scale, fast * scale
        why += f", against the pace before tuning ({untuned_speed * 1.024 / 1000:.1f} MB/s)"
    if ratio < NO_GAIN:
        why += ": the disks already run about as fast as boost could make them"
        return BoostEstimate(None, None, None, ratio, source, why=why, helps=False)
    slow = max(slow, 1.0)  # at worst, boost leaves the pace as it is
    return BoostEstimate(
        eta=now + (eta - now) / ratio,
        low=now + (low - now) / fast,
        high=now + (high - now) / slow,
        ratio=ratio,
        source=source,
        why=why,
    )
