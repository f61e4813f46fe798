"""Auto-tune through the real server on the simulated box: a whole sweep, and kill -9 mid-sweep."""

import json
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from tests.server import Server, wait_for

# Steps in simulated seconds (the demo runs 100x, and rewrites its tree every 10 simulated
# seconds): a step measures 15 rewrites at least, ~2 s of wall time.
STEPS = {
    "MDBOOST_SAMPLE_SECONDS": "0.1",
    "MDBOOST_AUTOTUNE_SETTLE_SECONDS": "20",
    "MDBOOST_AUTOTUNE_MEASURE_SECONDS": "150",
    "MDBOOST_AUTOTUNE_MAX_MEASURE_SECONDS": "300",
}
STRIPE_CACHE = "tree/sys/block/md2/md/stripe_cache_size"
READ_AHEAD = "tree/sys/block/md2/queue/read_ahead_kb"
LONGEST_STEP_S = 20 + 300  # settle + longest measurement, simulated seconds


def demo(tmp_path: Path, **env: str) -> Server:
    """`mdboost demo` at 100x on a state directory that survives a restart."""
    args = ["demo", "--speedup", "100", "--state-dir", str(tmp_path)]
    return Server(args, env={**STEPS, **env}, log=tmp_path / "server.log")


def sweep_of(server: Server) -> dict:
    sweep: dict = server.get("/api/tuning")["autotune"]
    return sweep


def start_sweep(server: Server) -> None:
    wait_for(lambda: server.get("/api/runs")["runs"], 30, "the sampler to open md2's run")
    status, body = server.request("POST", "/api/autotune", {})
    assert status == 200, body


def quiet_ahead(tmp_path: Path) -> bool:
    """Whether the simulator's indexer (a reader it bursts at its own simulated times, the first
    600 s in) is not reading now and will not start before two of the longest steps have passed.
    A ladder cannot return to its first step: were that step measured partly under the burst, the
    sweep would rightly forget it ("measured under another load") and have no score for 256; how
    late in simulated time the sweep begins depends on how busy this machine is."""
    state = json.loads((tmp_path / "tree/state.json").read_text())
    now = state["anchor_wall"] + (time.time() - state["anchor_wall"]) * state["speedup"]
    over = state["sim_time"] >= state["burst_until"]
    return over and state["next_burst"] - now >= 2 * LONGEST_STEP_S


def test_on_the_simulator_a_sweep_finds_the_field_reports_best_stripe_cache(tmp_path):
    with demo(tmp_path) as server:
        wait_for(lambda: quiet_ahead(tmp_path), 300, "a stretch without the simulated indexer")
        start_sweep(server)
        status, body = server.request("POST", "/api/autotune", {})
        assert status == 409 and "running already" in body["detail"]["message"]
        assert "measuring…" in server_page(server)  # the panel polls while it measures
        # A deadline, not a pace: a loaded machine stretches the demo's simulated seconds.
        sweep = wait_for(
            lambda: (s := sweep_of(server))["state"] != "running" and s, 600, "the sweep to end"
        )
        assert sweep["state"] == "done", sweep["reason"]
        # The simulator answers like the seeds: 16384 fastest, 4096 at 4/5; the ladder climbs
        # from the value found and never steps down.
        assert sweep["chosen"]["stripe_cache_size"] == 16384
        assert (tmp_path / STRIPE_CACHE).read_text() == "16384\n"
        ladder = [s for s in sweep["steps"] if s["knob"] == "stripe_cache_size"]
        values = [s["value"] for s in ladder]
        assert values == sorted(values) and values[0] == 256 and values[-1] == 16384
        scores = {s["value"]: s["score"] for s in ladder if s["score"] is not None}
        assert scores[256] < 0.4 and scores[4096] < 0.9 and scores[16384] == 1.0
        page = server_page(server)
        assert "Auto-tune on md2: done" in page and "kept stripe cache 16384" in page
        # The chart's marks: a line per step, named in the list below it.
        assert '<li class="marker-autotune" data-ts=' in page
        assert "auto-tune: stripe cache 4096</li>" in page
        status, body = server.request("POST", "/api/revert", {})
        assert status == 200
        assert (tmp_path / STRIPE_CACHE).read_text() == "256\n"


def server_page(server: Server) -> str:
    with urllib.request.urlopen(server.base + "/", timeout=10) as response:
        return str(response.read().decode())


def frozen_on_a_candidate(server: Server, tmp_path: Path) -> bool:
    """Stop the server (SIGSTOP) when the kernel holds a value other than the original, else
    let it run on: so that the kill that follows lands mid-sweep, on a changed knob."""
    assert server.process is not None
    server.process.send_signal(signal.SIGSTOP)
    if (tmp_path / STRIPE_CACHE).read_text() != "256\n":
        return True
    server.process.send_signal(signal.SIGCONT)
    return False


def test_kill_9_mid_sweep_puts_back_the_values_found_at_the_next_start(tmp_path):
    first = demo(tmp_path).start()
    try:
        start_sweep(first)
        wait_for(lambda: len(sweep_of(first)["steps"]) >= 2, 120, "two measured steps")
        wait_for(lambda: frozen_on_a_candidate(first, tmp_path), 120, "a candidate in the kernel")
    finally:
        first.kill()  # SIGKILL also ends a stopped process
    with demo(tmp_path) as again:
        sweep = sweep_of(again)
        assert sweep["state"] == "interrupted"
        assert sweep["reason"] == "mdboost stopped during the sweep"
        assert again.get("/api/tuning")["active"] is False
    assert (tmp_path / STRIPE_CACHE).read_text() == "256\n"
    assert (tmp_path / READ_AHEAD).read_text() == "256\n"


@pytest.mark.parametrize("crash_at", ["after_journal", "mid_write"])
def test_kill_9_inside_a_sweep_write_is_reconciled_like_any_apply(tmp_path, crash_at):
    first = demo(tmp_path, MDBOOST_TEST_CRASH_AT=crash_at).start()
    try:
        start_sweep(first)  # holds the value found: the first write comes with the next step
        assert first.process is not None
        assert first.process.wait(timeout=120) == -9  # killed in the sweep's first write
    finally:
        first.kill()
    with demo(tmp_path) as again:
        assert sweep_of(again)["state"] == "interrupted"
        assert again.get("/api/tuning")["active"] is False
    log = (tmp_path / "server.log").read_text()
    assert "mdboost stopped in the middle of an apply or revert" in log
    assert (tmp_path / STRIPE_CACHE).read_text() == "256\n"
