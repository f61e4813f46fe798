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
    """Sampled every 30 s, two samples (30 s) do: more would leave a 5-minute run without a
    number for a minute or more (and those rows count with finish='s error)."""
    regime = Regime(Point(0.0, 0.0, 0), "start")
    assert regime.measure(steady(regime, COARSE_SAMPLES - 1, 30.0, 100.0)) is None
    regime = Regime(Point(0.0, 0.0, 0), "start")
    assert regime.measure(steady(regime, COARSE_SAMPLES, 0.8 * COARSE_SPAN_S, 100.0)) is None
    regime = Regime(Point(0.0, 0.0, 0), "start")
    span = COARSE_SPAN_S / (COARSE_SAMPLES - 1)
    assert regime.measure(steady(regime, COARSE_SAMPLES, span, 100.0)) == 100.0


def test_thirds_split_the_window_by_time() -> None:
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = regime.first
    for count in range(1, 91):  # the window is the later two thirds: samples 30 to 90
        pace = 100.0 if count <= 50 else 300.0
        last = Point(count * 5.0, last.done + 5.0 * pace, count)
        regime.checkpoint(last)
    thirds = regime.thirds(last)
    assert thirds is not None
    first, middle, newest = thirds
    # The cuts fall on marks (whole steps), so a third may hold a mark's worth of its neighbour.
    assert first == pytest.approx(100.0, rel=0.05)
    assert middle == pytest.approx(300.0, rel=0.05) and newest == pytest.approx(300.0)


def test_the_quick_spells_pace_is_a_high_quantile_of_the_spells() -> None:
    """Bursts take 1 spell in 4: the 0.9 quantile is the pace without them."""
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = regime.first
    for count in range(1, 41):
        pace = 50.0 if count % 4 == 0 else 200.0
        last = Point(count * 5.0, last.done + 5.0 * pace, count)
        regime.checkpoint(last)
    assert regime.spell_quantile(last, 0.9) == pytest.approx(200.0)
    assert regime.spell_quantile(last, 0.1) == pytest.approx(50.0)


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
