"""One regime's measuring window and the evidence for the range."""

import pytest

from app.forecast.regime import (
    COARSE_SAMPLES,
    COARSE_SPAN_S,
    MIN_SAMPLES,
    MIN_SPAN_S,
    PRIOR_HIGH,
    PRIOR_LOW,
    Point,
    Regime,
)


def steady(regime: Regime, samples: int, step_s: float, blocks_s: float) -> Point:
    last = regime.first
    for count in range(1, samples):
        last = Point(count * step_s, count * step_s * blocks_s, count)
        regime.checkpoint(last)
    return last


def test_a_regime_too_short_to_judge_has_no_speed() -> None:
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, MIN_SAMPLES - 1, 5.0, 100.0)
    assert regime.measure(last) is None
    quick = Regime(Point(0.0, 0.0, 0), "start")
    assert quick.measure(steady(quick, 50, MIN_SPAN_S / 100, 100.0)) is None  # under 20 s


def test_a_run_sampled_coarsely_is_measured_from_fewer_samples() -> None:
    """Sampled every 30 s, three samples (a minute) do: six would leave a 5-minute run without
    a number for half its life."""
    regime = Regime(Point(0.0, 0.0, 0), "start")
    assert regime.measure(steady(regime, COARSE_SAMPLES - 1, 30.0, 100.0)) is None
    regime = Regime(Point(0.0, 0.0, 0), "start")
    assert regime.measure(steady(regime, COARSE_SAMPLES, COARSE_SPAN_S / 2, 100.0)) == 100.0


def test_a_steady_regime_measures_its_speed() -> None:
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, 100, 5.0, 250.0)
    assert regime.measure(last) == pytest.approx(250.0)


def test_the_range_is_the_prior_until_checkpoints_have_missed_anything() -> None:
    fresh = Regime(Point(0.0, 0.0, 0), "start")
    low, high = fresh.error_quantiles(Point(1.0, 1.0, 1), 3600.0)
    assert low < PRIOR_LOW < 0 < PRIOR_HIGH < high
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, 200, 5.0, 250.0)
    narrow, wide = regime.error_quantiles(last, 3600.0)
    assert low < narrow < 0 < wide < high  # a run that kept its pace narrows the range


def test_a_jumpy_pace_widens_the_range_less_over_a_longer_horizon() -> None:
    smooth = Regime(Point(0.0, 0.0, 0), "start")
    steady(smooth, 200, 5.0, 250.0)
    assert smooth.jitter(600.0) < 1e-9
    jumpy = Regime(Point(0.0, 0.0, 0), "start")
    done = 0.0
    for count in range(1, 200):
        done += 5.0 * (50.0 if count % 40 < 10 else 300.0)  # a burst every 200 s
        jumpy.checkpoint(Point(count * 5.0, done, count))
    near, far = jumpy.jitter(60.0), jumpy.jitter(6000.0)
    assert near > 0.3 and far < near / 5
