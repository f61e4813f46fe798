"""A real Prometheus scrapes a real `mdboost demo` and answers over its HTTP API.

Debian's prometheus binary runs directly (not as a service) on free ports with a temp TSDB,
with contrib/'s alert rules loaded; the test waits on Prometheus's answers with deadlines.
"""

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree
from tests.metrics.conftest import PrometheusTools
from tests.server import Server, free_port, tree_server, wait_for

CONTRIB = PROJECT_ROOT / "contrib"
ALERTS = CONTRIB / "prometheus" / "mdboost-alerts.yml"
DASHBOARD = CONTRIB / "grafana" / "mdboost-fleet.json"


class Prometheus:
    def __init__(self, binary: str, work: Path, target: str, config_text: str = "") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = work / "prometheus.yml"
        config.write_text(
            config_text
            or "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: [{json.dumps(str(ALERTS))}]\n"
            "scrape_configs:\n  - job_name: mdboost\n"
            f"    static_configs: [{{targets: [{json.dumps(target)}]}}]\n"
        )
        self.log = work / "prometheus.log"
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={work / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.base}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as response:
            answer = json.load(response)
        assert answer["status"] == "success", answer
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def scraped(prometheus_tools: PrometheusTools, tmp_path: Path) -> Iterator[Prometheus]:
    demo = Server(
        ["demo", "--speedup", "50", "--state-dir", str(tmp_path / "demo")],
        log=tmp_path / "mdboost.log",
    )
    with demo:
        prometheus = Prometheus(prometheus_tools.prometheus, tmp_path, f"127.0.0.1:{demo.port}")
        try:

            def ready() -> bool:
                with urllib.request.urlopen(f"{prometheus.base}/-/ready", timeout=2) as answer:
                    return answer.status == 200

            wait_for(ready, 60, "Prometheus to be ready")
            yield prometheus
        finally:
            prometheus.stop()


def value(series: dict[str, Any]) -> float:
    return float(series["value"][1])


def test_prometheus_scrapes_the_reshape_forecast_and_node_series(scraped: Prometheus):
    completed = 'mdboost_md_sync_completed_sectors{job="mdboost",device="md2"}'
    wait_for(lambda: scraped.query(f"count_over_time({completed}[1m]) >= 4"), 60, "4 scrapes")
    # The reshape's progress rises from scrape to scrape, as Prometheus stored it.
    stored = scraped.query(f"{completed}[1m]")
    assert len(stored) == 1
    points = [float(v) for _, v in stored[0]["values"]]
    assert points == sorted(points) and points[-1] > points[0], points
    assert scraped.query('mdboost_md_sync_action{device="md2",action="reshape"} == 1')

    bounds = wait_for(
        lambda: scraped.query('mdboost_md_forecast_finish_timestamp_seconds{device="md2"}'),
        60,
        "the forecast series",
    )
    by_bound = {s["metric"]["bound"]: value(s) for s in bounds}
    assert set(by_bound) == {"low", "mid", "high"}
    assert by_bound["low"] <= by_bound["mid"] <= by_bound["high"]

    # node_exporter's series: during a reshape every node_md_state reads 0 (procfs "reshaping").
    states = scraped.query('node_md_state{device="md2"}')
    assert len(states) == 5 and all(value(s) == 0 for s in states)
    arrays = {s["metric"]["device"] for s in scraped.query("node_md_blocks")}
    assert arrays == {"md0", "md1", "md2", "md3"}
    # The same mdstat read behind both: node_exporter's 1 KiB blocks are 2 sectors each.
    difference = scraped.query(f'node_md_blocks_synced{{device="md2"}} * 2 - {completed}')
    assert [value(s) for s in difference] == [0.0]

    # contrib's alert rules load and evaluate without error against real series.
    def rules_evaluated() -> list[dict[str, Any]]:
        rules = [r for g in scraped.api("rules")["groups"] for r in g["rules"]]
        return rules if all(r.get("lastEvaluation", "").startswith("2") for r in rules) else []

    rules = wait_for(rules_evaluated, 30, "the alert rules to be evaluated")
    assert len(rules) == 7 and all(r["health"] == "ok" for r in rules), rules

    # Every query of contrib's Grafana dashboard is valid PromQL with an answer for md2.
    panels = json.loads(DASHBOARD.read_text())["panels"]
    exprs = [t["expr"].replace("$instance", ".*") for p in panels for t in p["targets"]]
    answered = {e: scraped.query(e) for e in exprs}
    assert answered[exprs[0]] and all(isinstance(r, list) for r in answered.values())


def contrib_job_with_its_token(target: str, token_file: Path) -> str:
    """contrib's scrape example as a user enables it: the authorization lines uncommented, the
    token file and the target theirs, a 1 s interval so the test need not wait 30 s."""
    text = (CONTRIB / "prometheus" / "prometheus.yml").read_text()
    assert "credentials_file: /etc/prometheus/mdboost-read-token" in text
    text = text.replace("    # authorization:", "    authorization:")
    text = text.replace(
        "    #   credentials_file: /etc/prometheus/mdboost-read-token",
        "      credentials_file: " + json.dumps(str(token_file)),
    )
    text = text.replace('["nas1.lan:8080", "nas2.lan:8080"]', f"[{json.dumps(target)}]")
    text = text.replace("scrape_interval: 30s", "scrape_interval: 1s")
    return text.replace("  - mdboost-alerts.yml", f"  - {json.dumps(str(ALERTS))}")


def test_the_contrib_scrape_job_reads_with_a_read_token_that_cannot_boost(
    prometheus_tools: PrometheusTools, box: KernelTree, tmp_path: Path
):
    read_token = "read-only-token-for-prometheus-0123456789abcdef0123456789"
    token_file = tmp_path / "mdboost-read-token"
    token_file.write_text(read_token + "\n")
    env = {"MDBOOST_READ_REQUIRES_LOGIN": "true", "MDBOOST_READ_TOKEN": read_token}
    with tree_server(box, tmp_path, **env) as server:
        config = contrib_job_with_its_token(f"127.0.0.1:{server.port}", token_file)
        prometheus = Prometheus(prometheus_tools.prometheus, tmp_path, "", config)
        try:
            scraped = 'mdboost_md_sync_action{job="mdboost",device="md2",action="reshape"} == 1'
            wait_for(lambda: prometheus.query(scraped), 60, "a scrape with the read token")
        finally:
            prometheus.stop()
        # The token the scrape sends in clear every 30 s changes nothing.
        before = box.snapshot()
        read = {"Authorization": f"Bearer {read_token}"}
        assert server.request("POST", "/api/boost", {"on": True}, read)[0] == 403
        assert server.request("POST", "/api/tokens", {"name": "x"}, read)[0] == 403
        assert box.snapshot() == before
