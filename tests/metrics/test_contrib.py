"""contrib/prometheus passes promtool: the rules parse, their unit tests fire, the config loads."""

from tests import PROJECT_ROOT
from tests.metrics.conftest import PrometheusTools

PROMETHEUS = PROJECT_ROOT / "contrib" / "prometheus"


def test_alert_rules_are_valid_and_fire_as_their_unit_tests_say(
    prometheus_tools: PrometheusTools,
):
    checked = prometheus_tools.check("check", "rules", str(PROMETHEUS / "mdboost-alerts.yml"))
    assert "SUCCESS: 7 rules found" in checked
    tested = prometheus_tools.check("test", "rules", str(PROMETHEUS / "mdboost-alerts.test.yml"))
    assert "SUCCESS" in tested


def test_scrape_example_is_a_valid_config(prometheus_tools: PrometheusTools):
    assert "SUCCESS" in prometheus_tools.check(
        "check", "config", str(PROMETHEUS / "prometheus.yml")
    )
