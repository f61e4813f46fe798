"""What if I boost: the forecast if the boost preset were applied now, always an estimate."""

from dataclasses import asdict, dataclass
from typing import Any, Literal

from app.forecast.model import Forecast
from app.forecast.physics import FREED_RANGE, FREED_SPEEDUP, kernel_generation


@dataclass(frozen=True)
class CleanBench:
    """Boost against the defaults on one kernel generation, from clean trials only: a RAID5 3->4
    grow of HDD-like disks in QEMU (60 MB/s and 120 requests/s each, 64 KiB chunks, DSM-like
    limits), one trial per boot, interleaved, two or more of each, every trial at a host load
    under 1.5 per core (docs/performance.md). The README's table shows the same figures."""

    ratio: float  # the defaults' mean time / boost's
    release: str  # the kernel's release, as uname -r printed it
    date: str  # when the trials ran, UTC


# "What if I boost" without a measured effect on this box, per kernel generation. A generation
# without clean trials gets FALLBACK's figure and says so: the figures measured while the build
# machine was busy (6.12's boost, 5.10's 0.87x) measured the machine.
CLEAN_BENCH = {"6.1": CleanBench(1.29, "6.1.0-56", "2026-11-26")}
FALLBACK = "6.1"
MODEL_BOOST_RATIO = CLEAN_BENCH[FALLBACK].ratio
# One md thread near a full core (the diagnosis's cpu_bound): with QEMU held to 0.6 of a core,
# md0_raid5 at 87-98 % of a vCPU, boost ran a 5.10 grow at 0.80x of the defaults' pace.
CPU_BOUND_RATIO = 1.0
CPU_BOUND_FIGURE = "Linux 5.10 with QEMU held to 0.6 of a core: boost ×0.80"
MODEL_BOOST_RANGE = (1.0, 2.0)
LIMIT_BOOST_CAP = 5.0  # the seeds' best measured boost
MEASURED_BOOST_SPREAD = 0.15
# Below this gain boost is not offered: the page says it would not help, rather than promise
# a speed-up within md's own jitter.
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


def model_ratio(kernel_release: str | None) -> tuple[float, str]:
    """The disk-bound boost figure for this kernel, and its source in words: the clean bench on
    this kernel's generation, else on FALLBACK's."""
    generation = kernel_generation(kernel_release)
    bench = CLEAN_BENCH.get(generation or "")
    if bench is not None:
        return bench.ratio, (
            f"boost made HDD-like disks ×{bench.ratio:.2f} faster on Linux {bench.release} "
            f"(clean bench, {bench.date})"
        )
    bench = CLEAN_BENCH[FALLBACK]
    return bench.ratio, (
        f"boost made HDD-like disks ×{bench.ratio:.2f} faster on Linux {bench.release} "
        f"(clean bench, {bench.date}; Linux {generation or 'of this box'} is not yet measured "
        "cleanly)"
    )


def boost_forecast(
    current: Forecast,
    measured_ratio: float | None = None,
    boost_max: float | None = None,
    measured_on: str = "this array",
    untuned_speed: float | None = None,
    disks: tuple[str, float] | None = None,
    kernel_release: str | None = None,
    cpu_bound: tuple[str, float] | None = None,
) -> BoostEstimate | None:
    """The forecast if the boost preset were applied now.

    From the measured effect of past boosts when there is one (this array's, or, named by
    `measured_on`, a sibling's in the same SHR pool; speed with the boost / speed without, from
    the tuning journal); otherwise from the physics: a run held by its max goes at most up to the
    boost's new max (`boost_max`, KiB/s) and no faster than the disks went in this array's last
    check or resync (`disks`: its action and KiB/s), a disk-bound one by the real kernel's
    stripe-cache figure, unless one md thread is near a full core (`cpu_bound`: its name and
    cores, from the diagnosis), where a larger cache gains nothing; `why` says which, in words.
    Each of these is a gain over the untuned pace: while another preset holds the run
    (auto-tune), `untuned_speed` (blocks/s before it) scales it to the pace now. None when the
    current forecast has no number to scale.
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
    elif current.bound == "max limit":
        by_limits = boost_max / speed if boost_max else LIMIT_BOOST_CAP
        by_disks = disks[1] / speed if disks else FREED_SPEEDUP
        ratio, source = max(1.0, min(by_limits, by_disks, LIMIT_BOOST_CAP)), "limit"
        slow, fast = FREED_RANGE[0], max(ratio, min(FREED_RANGE[1], by_limits, LIMIT_BOOST_CAP))
        why = f"its speed limit holds it at {_mb_s(speed)}: boost lifts the limit"
        why += f" to {_mb_s(boost_max)}" if boost_max else ""
        if disks:
            why += f", and the disks did {_mb_s(disks[1])} in its last {disks[0]}"
            fast = max(ratio, min(fast, by_disks * (1 + MEASURED_BOOST_SPREAD)))
        else:
            why += ", and the disks decide how far (a guess: twice as fast)"
    elif cpu_bound is not None:
        ratio, source = CPU_BOUND_RATIO, "model"
        slow, fast = MODEL_BOOST_RANGE
        why = (
            f"{cpu_bound[0]} uses {cpu_bound[1]:.0%} of a CPU core: the CPU sets the pace, and a "
            f"larger stripe cache made such a grow slower ({CPU_BOUND_FIGURE})"
        )
    else:
        ratio, figure = model_ratio(kernel_release)
        source = "model"
        slow, fast = MODEL_BOOST_RANGE
        why = f"the disks set the pace, and {figure}"
    if untuned_speed is not None:
        scale = untuned_speed / speed
        ratio, slow, fast = ratio * scale, slow * scale, fast * scale
        why += f", against the pace before tuning ({_mb_s(untuned_speed)})"
    if ratio < NO_GAIN:
        if source == "measured":
            why += ": boost did not make it faster here"
        elif cpu_bound is not None and source == "model":
            why += ": boost would not make it faster"
        else:
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


def _mb_s(kb_s: float) -> str:
    """KiB/s as the page says it: decimal MB/s."""
    return f"{kb_s * 1.024 / 1000:.1f} MB/s"
