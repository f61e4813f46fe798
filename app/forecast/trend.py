"""HDD inner tracks are slower: a speed that falls with progress, fitted and extrapolated."""

import itertools
import math

# HDD inner tracks are slower: a regime that spans enough progress and shows a significantly
# falling speed (t statistic) is extrapolated along it (fraction lost from 0 % to 100 %).
TREND_MIN_INTERVALS = 8
TREND_MIN_SPAN = 0.15
TREND_T = 3.0
TREND_MAX = 0.8


def zone_seconds(p0: float, p1: float, trend: float) -> float:
    """Integral of dp / (speed(p) / speed(p0)) when the speed falls linearly by `trend`."""
    if trend <= 0:
        return p1 - p0
    a = trend
    return (1 - a * p0) * (math.log(1 - a * p0) - math.log(1 - a * p1)) / a


def falling_trend(checkpoints: list[tuple[float, float, float]], total: int) -> float:
    """Fraction the speed loses from progress 0 to 1, fitted on the local speeds between the
    regime's checkpoints free of bursts (a burst holds md near its min: far below the median)."""
    if len(checkpoints) < TREND_MIN_INTERVALS + 1:
        return 0.0
    if (checkpoints[-1][1] - checkpoints[0][1]) / total < TREND_MIN_SPAN:
        return 0.0
    local = [
        ((d0 + d1) / 2 / total, (d1 - d0) / (t1 - t0))
        for (t0, d0, _), (t1, d1, _) in itertools.pairwise(checkpoints)
        if t1 > t0
    ]
    median = sorted(s for _, s in local)[len(local) // 2]
    points = [(p, s) for p, s in local if s >= 0.7 * median]
    n = len(points)
    if n < TREND_MIN_INTERVALS:
        return 0.0
    mean_p = sum(p for p, _ in points) / n
    mean_s = sum(s for _, s in points) / n
    sxx = sum((p - mean_p) ** 2 for p, _ in points)
    if sxx <= 0:
        return 0.0
    slope = sum((p - mean_p) * (s - mean_s) for p, s in points) / sxx
    intercept = mean_s - slope * mean_p
    residual = sum((s - intercept - slope * p) ** 2 for p, s in points) / (n - 2)
    stderr = math.sqrt(residual / sxx) if residual > 0 else 0.0
    if slope >= 0 or intercept <= 0 or (stderr > 0 and -slope / stderr < TREND_T):
        return 0.0
    return min(-slope / intercept, TREND_MAX)
