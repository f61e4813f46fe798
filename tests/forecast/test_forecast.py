"""The ETA model (issue 5): edge cases, regimes, the knee, the pool, the replay CLI, the API, and
the backtest's targets over the committed recorded runs."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.forecast.model import (
    KNEE_SPEEDUP,
    MODEL_BOOST_RATIO,
    STALL_S,
    Forecast,
    PoolMember,
    Sample,
    boost_forecast,
    forecast,
    grow_knee,
    pool_forecast,
)
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.main import create_app
from app.simulator import Simulator
from app.store import db
from tests import PROJECT_ROOT

T0 = 1_700_000_000.0
TOTAL = 10_000_000


def steady(
    seconds: float, speed: float, start_ts: float = T0, start_done: float = 0, step: float = 10
) -> list[Sample]:
    """Samples every `step` s of a run moving at `speed` blocks/s."""
    count = int(seconds // step)
    return [
        (start_ts + i * step, int(start_done + i * step * speed), TOTAL) for i in range(count + 1)
    ]


def left_s(fc: Forecast) -> float:
    assert fc.status == "ok" and fc.eta is not None and fc.as_of is not None, fc
    return fc.eta - fc.as_of


# ---- edge cases


def test_no_samples_gives_no_number() -> None:
    fc = forecast([])
    assert fc.status == "insufficient" and fc.eta is None and fc.reason


def test_one_sample_gives_no_number() -> None:
    fc = forecast([(T0, 1000, TOTAL)])
    assert fc.status == "insufficient" and fc.eta is None
    assert fc.progress == pytest.approx(0.0001)


def test_samples_without_numbers_are_skipped() -> None:
    rows: list[Sample] = [(T0, None, None), (T0 + 1, 5, 0)]  # type: ignore[list-item]
    assert forecast(rows).status == "insufficient"


def test_stalled_run_at_zero_speed_gives_no_number() -> None:
    samples = steady(600, 1000) + [(T0 + 600 + s, 600_000, TOTAL) for s in range(10, 400, 10)]
    fc = forecast(samples)
    assert fc.status == "stalled" and fc.eta is None
    assert "no progress" in (fc.reason or "")


def test_a_pause_shorter_than_the_stall_limit_is_not_a_stall() -> None:
    pause = [(T0 + 600 + s, 600_000, TOTAL) for s in range(10, int(STALL_S) - 10, 10)]
    assert forecast(steady(600, 1000) + pause).status == "ok"


def test_never_moving_run_is_stalled() -> None:
    fc = forecast([(T0 + s, 5000, TOTAL) for s in range(0, 600, 10)])
    assert fc.status == "stalled"


def test_done_beyond_total_is_finished_at_the_first_full_sample() -> None:
    samples = steady(100, 1000, start_done=TOTAL - 200_000)
    samples += [(T0 + 110, TOTAL + 5, TOTAL), (T0 + 120, TOTAL + 900, TOTAL)]
    fc = forecast(samples)
    assert fc.status == "done"
    assert fc.eta == fc.low == fc.high == T0 + 110
    assert fc.progress == 1.0 and fc.remaining_blocks == 0


def test_restart_at_zero_forgets_the_old_run() -> None:
    before = steady(3600, 1000)  # 36 % at 1000 blocks/s
    restarted = [(T0 + 3610, 0, TOTAL), (T0 + 3620, 4000, TOTAL)]
    assert forecast(before + restarted).status == "insufficient"
    after = steady(600, 400, start_ts=T0 + 3610)
    fc = forecast(before + after)
    assert left_s(fc) == pytest.approx((TOTAL - 600 * 400) / 400, rel=0.01)


# ---- regimes


def test_only_the_regime_after_an_apply_describes_the_future() -> None:
    slow = steady(3600, 500)
    fast = steady(1200, 2500, start_ts=T0 + 3600, start_done=3600 * 500)[1:]
    fc = forecast(slow + fast, events=[(T0 + 3600, "apply")])
    remaining = TOTAL - fast[-1][1]
    assert left_s(fc) == pytest.approx(remaining / 2500, rel=0.02)
    assert fc.regime == "apply" and fc.regime_start == T0 + 3600
    without_event = forecast(slow + fast)
    assert left_s(without_event) > 1.5 * left_s(fc)


def test_just_after_an_apply_it_says_it_is_measuring() -> None:
    samples = [*steady(3600, 500), (T0 + 3610, 3600 * 500 + 25000, TOTAL)]
    fc = forecast(samples, events=[(T0 + 3600, "apply")])
    assert fc.status == "settling" and fc.eta is None


def test_bursts_of_competing_io_count_in_proportion() -> None:
    """Every 20 min, 5 min at a quarter speed: the future average, not the burst, decides."""
    samples: list[Sample] = []
    done = 0.0
    for i in range(6 * 360):  # 6 h of 10 s samples
        samples.append((T0 + i * 10, int(done), TOTAL))
        done += 10 * (100 if (i * 10) % 1200 < 300 else 400)
    average = (300 * 100 + 900 * 400) / 1200
    fc = forecast(samples)
    truth = (TOTAL - samples[-1][1]) / average
    assert left_s(fc) == pytest.approx(truth, rel=0.03)
    assert fc.low is not None and fc.high is not None and fc.as_of is not None
    assert fc.low <= fc.as_of + truth <= fc.high


def test_progress_in_jumps_is_smoothed() -> None:
    """At low limits progress arrives in jumps: every 6th one-second sample moves."""
    samples = [(T0 + s, (s // 6) * 6 * 800, TOTAL) for s in range(0, 900)]
    fc = forecast(samples)
    assert fc.status == "ok"
    assert left_s(fc) == pytest.approx((TOTAL - samples[-1][1]) / 800, rel=0.02)


def test_speed_falling_towards_inner_tracks_is_extrapolated() -> None:
    """HDD zones: speed falls linearly with progress from 2000 to 1000 blocks/s."""
    samples: list[Sample] = []
    done, ts = 0.0, T0
    while done < 0.5 * TOTAL:
        samples.append((ts, int(done), TOTAL))
        done += 60 * 2000 * (1 - 0.5 * done / TOTAL)
        ts += 60
    truth, d = 0.0, done
    while d < TOTAL:
        truth += 1
        d += 2000 * (1 - 0.5 * d / TOTAL)
    fc = forecast(samples)
    assert fc.trend == pytest.approx(0.5, abs=0.05)
    assert left_s(fc) == pytest.approx(truth, rel=0.03)


# ---- the grow's knee


def test_grow_knee_from_geometry() -> None:
    assert grow_knee("raid5", (4, 3)) == pytest.approx(2 / 3)
    assert grow_knee("raid6", (6, 5)) == pytest.approx(3 / 4)
    assert grow_knee("raid5", (4, None)) is None
    assert grow_knee("raid5", (3, 4)) is None  # a shrink has no such knee
    assert grow_knee("raid1", (3, 2)) is None


def test_before_the_knee_the_tail_runs_faster() -> None:
    knee = 2 / 3
    samples = steady(2000, 1000)  # 20 %
    fc = forecast(samples, knee=knee)
    done = samples[-1][1]
    expected = (knee * TOTAL - done) / 1000 + (1 - knee) * TOTAL / (1000 * KNEE_SPEEDUP)
    assert left_s(fc) == pytest.approx(expected, rel=0.01)
    plain = forecast(samples)
    assert left_s(plain) > left_s(fc)
    assert fc.low is not None and fc.high is not None and fc.as_of is not None
    assert fc.low < fc.eta < fc.high  # type: ignore[operator]


def test_past_the_knee_the_new_speed_is_measured() -> None:
    knee = 2 / 3
    before = steady(6670, 1000)  # reaches the knee at 6667 s
    after = steady(600, 4000, start_ts=before[-1][0], start_done=before[-1][1])[1:]
    fc = forecast(before + after, knee=knee)
    assert fc.regime == "knee"
    assert left_s(fc) == pytest.approx((TOTAL - after[-1][1]) / 4000, rel=0.03)


def test_right_after_the_knee_the_model_speed_is_used() -> None:
    knee = 2 / 3
    before = steady(6670, 1000)
    after = [(before[-1][0] + 10, before[-1][1] + 30_000, TOTAL)]
    fc = forecast(before + after, knee=knee)
    assert fc.status == "ok" and fc.regime == "knee"
    assert fc.speed_blocks_s == pytest.approx(1000 * KNEE_SPEEDUP, rel=0.02)


# ---- what if I boost, and the pool


def test_boost_from_a_measured_ratio_and_from_the_model() -> None:
    fc = forecast(steady(3600, 1000))
    measured = boost_forecast(fc, measured_ratio=2.0)
    assert measured is not None and measured.source == "measured"
    assert measured.label == "estimate"
    assert measured.eta - fc.as_of == pytest.approx(left_s(fc) / 2)  # type: ignore[operator]
    model = boost_forecast(fc)
    assert model is not None and model.source == "model" and model.ratio == MODEL_BOOST_RATIO
    assert model.low < model.eta < model.high  # type: ignore[operator]
    assert boost_forecast(forecast([])) is None


def test_pool_adds_queued_arrays_at_the_running_pace() -> None:
    fc = forecast(steady(3600, 1000))
    members = [
        PoolMember("md2", "done", 2 * TOTAL),
        PoolMember("md3", "running", TOTAL, fc),
        PoolMember("md4", "queued", TOTAL // 2),
    ]
    pool = pool_forecast(members)
    assert pool.status == "ok" and pool.phase == 2 and pool.phases == 3
    assert pool.eta == pytest.approx(fc.eta + TOTAL / 1000 / 2)  # type: ignore[operator]
    assert pool.low < pool.eta < pool.high  # type: ignore[operator]
    assert pool_forecast([PoolMember("md2", "done")]).status == "done"
    idle = pool_forecast([PoolMember("md2", "queued", TOTAL)])
    assert idle.status == "insufficient" and idle.eta is None


# ---- the replay CLI, run as a user would


def test_replay_cli_prints_one_row_per_input_row(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ts", "done", "total", "finish_min", "event", "unused"])
        for i, (ts, done, total) in enumerate(steady(300, 1000, step=10)):
            writer.writerow([f"{ts:.0f}", done, total, "", "apply" if i == 15 else "", "x"])
    result = subprocess.run(
        [sys.executable, "-m", "app", "forecast", "--replay", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    rows = list(csv.reader(result.stdout.splitlines()))
    assert rows[0] == ["ts", "eta", "low", "high"]
    assert len(rows) == 1 + 31
    assert rows[1] == [f"{T0:.0f}", "", "", ""]  # no forecast from one row
    ts, eta, low, high = (float(v) for v in rows[10])
    assert low < eta < high and ts == T0 + 90
    assert float(rows[-1][1]) == pytest.approx(T0 + TOTAL / 1000, rel=1e-4)


def test_replay_cli_rejects_a_file_without_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("time,progress\n1,2\n")
    result = subprocess.run(
        [sys.executable, "-m", "app", "forecast", "--replay", str(path)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
    )
    assert result.returncode == 1 and "missing column" in result.stderr


# ---- the API on the simulated box


def test_forecast_api_on_the_simulator(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=20.0)
    settings = Settings(
        proc_root=tmp_path / "tree" / "proc",
        sys_root=tmp_path / "tree" / "sys",
        db=tmp_path / "mdboost.db",
    )
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, lambda: sim.state.sim_time)
    for _ in range(40):
        sim.advance(30)
        sampler.sample_once()
    conn.close()
    app = create_app(settings)
    app.state.clock = lambda: sim.state.sim_time
    client = TestClient(app)

    body = client.get("/api/arrays/md2/forecast").json()
    fc = body["forecast"]
    assert body["action"] == "reshape" and fc["status"] == "ok"
    assert fc["knee"] == pytest.approx(2 / 3)
    assert fc["low"] < fc["eta"] < fc["high"]
    assert body["now"] == sim.state.sim_time
    assert body["eta_in_s"] == pytest.approx(fc["eta"] - sim.state.sim_time)
    assert body["boost"]["source"] == "model" and body["boost"]["label"] == "estimate"

    idle = client.get("/api/arrays/md3/forecast").json()
    assert idle["forecast"]["status"] == "insufficient" and idle["forecast"]["eta"] is None
    assert client.get("/api/arrays/md9/forecast").status_code == 404

    pool = client.get("/api/pool/forecast").json()
    assert pool["pool"]["status"] == "ok" and pool["pool"]["phase"] == 1
    assert pool["pool"]["eta"] == pytest.approx(fc["eta"])


# ---- the backtest over the committed recorded runs


def test_backtest_meets_the_targets() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/backtest_forecast.py", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    figures = json.loads(result.stdout)
    for run_class in ("changes", "bursts"):
        row = figures[run_class]
        assert row["mdboost_median"] * 2 <= row["kernel_median"], (run_class, row)
    steady_row = figures["steady"]
    assert steady_row["mdboost_median"] <= steady_row["kernel_median"], steady_row
    assert figures["overall"]["coverage"] >= 80, figures["overall"]
    assert figures["real runs"]["runs"] >= 3
