"""One regime's measuring window and the evidence for the range."""

from app.forecast.regime import MIN_SAMPLES, MIN_SPAN_S, PRIOR_HIGH, PRIOR_LOW, Point, Regime


def steady(regime: Regime, samples: int, step_s: float, blocks_s: float) -> Point:
    last = regime.first
    for count in range(1, samples):
        last = Point(count * step_s, count * step_s * blocks_s, count)
        regime.checkpoint(last)
    return last


def test_a_regime_too_short_to_judge_has_no_speed() -> None:
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, MIN_SAMPLES - 1, 10.0, 100.0)
    assert regime.measure(last) is None
    quick = Regime(Point(0.0, 0.0, 0), "start")
    assert quick.measure(steady(quick, 50, MIN_SPAN_S / 100, 100.0)) is None  # under 20 s


def test_a_steady_regime_measures_its_speed() -> None:
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, 100, 5.0, 250.0)
    assert regime.measure(last) == 250.0


def test_the_range_is_the_prior_until_checkpoints_have_missed_anything() -> None:
    fresh = Regime(Point(0.0, 0.0, 0), "start")
    low, high = fresh.error_quantiles(Point(1.0, 1.0, 1), 3600.0)
    assert low < PRIOR_LOW < 0 < PRIOR_HIGH < high
    regime = Regime(Point(0.0, 0.0, 0), "start")
    last = steady(regime, 200, 5.0, 250.0)
    narrow, wide = regime.error_quantiles(last, 3600.0)
    assert low < narrow < 0 < wide < high  # a run that kept its pace narrows the range
