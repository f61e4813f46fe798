"""Every benchmark script runs, on tiny inputs, so none can rot unseen (a
benchmark that nothing runs can crash for weeks unnoticed).

A benchmark prints figures and asserts nothing about them; these tests only ask that each one
finishes and prints what it is there to print. A new script under scripts/ that measures
something must get a line in SMOKE (the first test fails until it does).
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests import PROJECT_ROOT

REALKERNEL = pytest.mark.realkernel
# script: (its smoke arguments, a line its output must hold, marks)
SMOKE: dict[str, tuple[list[str], str, tuple[pytest.MarkDecorator, ...]]] = {
    "bench_core.py": (["--smoke"], "sampler CPU per tick, mean", ()),
    "bench_year.py": (["--smoke"], "context switches per tick", ()),
    "bench_load.py": (["--clients", "2", "--seconds", "1"], "/healthz after the load: 200", ()),
    "probe_slowloris.py": (["--sockets", "5", "--hold", "1"], "fresh client: {200:", ()),
    "probe_lan.py": (
        ["--attack", "unread", "--seconds", "2"],
        "owner's pages answered 200 within",
        (),
    ),
    "count_io.py": ([], "one boost press (POST /ui/boost on):", ()),
    "crash_trials.py": (
        ["--trials", "2", "--modes", "apply:random", "revert:random"],
        "knobs inconsistent after restart:",
        (),
    ),
    "backtest_forecast.py": (
        [str(PROJECT_ROOT / "tests" / "fixtures" / "runs" / "real-steady-grow.csv")],
        "real runs",
        (),
    ),
    "bench_realkernel.py": (
        ["--pairs", "1", "--disk-mib", "64"],
        "ratio (A time / B time)",
        (REALKERNEL,),
    ),
    "bench_autotune.py": (
        ["--disk-mib", "256", "--plan", "defaults autotune"],
        "best: stripe_cache_size",
        (REALKERNEL,),
    ),
    "bench_boost.py": (
        [
            "--kinds",
            "boost",
            "--each",
            "1",
            "--disk-mib",
            "256",
            "--retries",
            "0",
            "--max-load-per-core",
            "1000",
            "--kernel",
            "6.1",
            "--out",
            "/tmp/bench-boost-smoke",
        ],
        "clean of 1 trials",
        (REALKERNEL,),
    ),
}
# Scripts that measure nothing: they record fixtures, take screenshots, save answers for a
# comparison or pack a release.
NOT_BENCHMARKS = {
    "api_answers.py",
    "grow_requests.py",
    "release.py",
    "record_real5s.py",
    "record_real_runs.py",
    "record_sim_runs.py",
    "screenshots.py",
}


def test_every_benchmark_script_has_a_smoke_run() -> None:
    scripts = {path.name for path in (PROJECT_ROOT / "scripts").glob("*.py")}
    assert scripts - NOT_BENCHMARKS == set(SMOKE), "add the new script to SMOKE or NOT_BENCHMARKS"


@pytest.mark.parametrize(
    "script",
    [pytest.param(name, marks=marks) for name, (_, _, marks) in SMOKE.items()],
)
def test_benchmark_runs_in_its_smoke_mode(script: str, tmp_path: Path) -> None:
    arguments, expected, _ = SMOKE[script]
    result = subprocess.run(
        [sys.executable, f"scripts/{script}", *arguments],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert expected in result.stdout, result.stdout[-3000:]
