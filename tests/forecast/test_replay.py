"""`mdboost forecast --replay`, run as a user would, and the backtest's targets."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import PROJECT_ROOT

T0 = 1_700_000_000.0
TOTAL = 10_000_000


def steady(seconds: float, speed: float, step: float = 10) -> list[tuple[float, int, int]]:
    return [(T0 + i * step, int(i * step * speed), TOTAL) for i in range(int(seconds // step) + 1)]


def replay(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "forecast", "--replay", str(path)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
    )


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_replay_prints_one_row_per_input_row(tmp_path: Path) -> None:
    rows: list[list[object]] = [
        [f"{ts:.0f}", done, total, "", "apply" if i == 15 else "", "x"]
        for i, (ts, done, total) in enumerate(steady(300, 1000))
    ]
    path = write_csv(
        tmp_path / "run.csv", ["ts", "done", "total", "finish_min", "event", "x"], rows
    )
    result = replay(path)
    assert result.returncode == 0, result.stderr
    out = list(csv.reader(result.stdout.splitlines()))
    assert out[0] == ["ts", "eta", "low", "high"]
    assert len(out) == 1 + 31
    assert out[1] == [f"{T0:.0f}", "", "", ""]  # no forecast from one row
    ts, eta, low, high = (float(v) for v in out[10])
    assert low < eta < high and ts == T0 + 90
    assert float(out[-1][1]) == pytest.approx(T0 + TOTAL / 1000, rel=1e-4)


def test_replay_uses_the_limits_a_grow_held_by_its_max_gets_no_knee(tmp_path: Path) -> None:
    """The same grow at 1000 KiB/s: with a max of 1000 md stays there past the knee; with a
    max of 200000 it is disk-bound and the tail is planned faster."""
    header = ["ts", "done", "total", "speed_min_kb_s", "speed_max_kb_s", "stripe_cache_size"]
    header += ["event", "knee"]
    answers = {}
    for speed_max in (1000, 200_000):
        rows: list[list[object]] = [
            [ts, done, total, 100, speed_max, 256, "", "0.6667"]
            for ts, done, total in steady(600, 1000)
        ]
        result = replay(write_csv(tmp_path / f"{speed_max}.csv", header, rows))
        assert result.returncode == 0, result.stderr
        answers[speed_max] = float(result.stdout.splitlines()[-1].split(",")[1])
    held_left = answers[1000] - (T0 + 600)
    assert held_left == pytest.approx((TOTAL - 600_000) / 1000, rel=0.01)
    assert answers[200_000] < answers[1000] - 1000


def test_replay_uses_the_recorded_kernel_for_the_knee(tmp_path: Path) -> None:
    """The same disk-bound grow recorded on 6.12 and on 6.1 (the `kernel` column): 6.12's knee
    barely speeds it up, so its tail is planned slower; without the column, 6.1's figure."""
    header = ["ts", "done", "total", "speed_max_kb_s", "knee", "kernel", "chunk_kb"]
    answers = {}
    for kernel in ("6.12.117+deb13-amd64", "6.1.0-56-amd64", ""):
        rows: list[list[object]] = [
            [ts, done, total, 200_000, "0.6667", kernel, 64]
            for ts, done, total in steady(600, 1000)
        ]
        result = replay(write_csv(tmp_path / f"k{kernel}.csv", header, rows))
        assert result.returncode == 0, result.stderr
        answers[kernel] = float(result.stdout.splitlines()[-1].split(",")[1])
    assert answers["6.12.117+deb13-amd64"] > answers["6.1.0-56-amd64"] + 1000
    assert answers[""] == answers["6.1.0-56-amd64"]


def test_replay_rejects_a_file_without_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("time,progress\n1,2\n")
    result = replay(path)
    assert result.returncode == 1 and "missing column" in result.stderr


def test_replay_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("ts,done,total\n1,2,3\n2,x,3\n")
    result = replay(path)
    assert result.returncode == 1 and "line 3" in result.stderr


def test_backtest_beats_finish_on_the_real_kernel_runs() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/backtest_forecast.py", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    real = json.loads(result.stdout)["real runs"]
    assert real["mdboost_median"] * 2 <= real["kernel_median"], real
    assert real["runs"] >= 8


def test_backtest_on_the_held_out_batch_recorded_after_the_model_was_frozen() -> None:
    """Batch b (tests/fixtures/runs/README.md): half finish='s median error and 80 % coverage, on runs its
    first model never saw (later models were tuned on b too: batches d on are held out for them)."""
    held_out = sorted((PROJECT_ROOT / "tests" / "fixtures" / "runs").glob("real5s-b-*.csv"))
    result = subprocess.run(
        [sys.executable, "scripts/backtest_forecast.py", "--json", *map(str, held_out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    figures = json.loads(result.stdout)
    batch = figures["real5s-b runs"]
    assert batch["runs"] >= 16, batch
    assert batch["mdboost_median"] * 2 <= batch["kernel_median"], batch
    assert batch["coverage"] >= 0.80, batch
    for steady in ("steady runs", "limit-bound runs"):
        assert figures[steady]["mdboost_median"] <= figures[steady]["kernel_median"], steady


def backtest_json(*args: str) -> dict[str, dict[str, float]]:
    result = subprocess.run(
        [sys.executable, "scripts/backtest_forecast.py", "--json", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def held_out_b() -> list[str]:
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-b-*.csv"))]


@pytest.mark.parametrize("step", [1, 2, 6])
def test_the_range_holds_on_the_held_out_batch_sampled_every_5_10_and_30_s(step: int) -> None:
    """Coverage >= 80 % whatever the sampling (at 30 s the old model held 71 %: six
    samples before a number left short runs without a range for half their life)."""
    batch = backtest_json("--step", str(step), *held_out_b())["real5s-b runs"]
    assert batch["coverage"] >= 0.80, batch
    assert batch["mdboost_median"] * 2 <= batch["kernel_median"], batch


def test_md_s_staircase_does_not_swing_the_forecast() -> None:
    """Replayed as md shows a sync held low (the position moves once every 16 s), the
    held-out batch keeps its bar, and runs held by their max stay ahead of finish= (the old
    model's error doubled on them: 5.1 % against finish='s 4.2 %)."""
    figures = backtest_json("--staircase", "16", *held_out_b())
    batch, limit = figures["real5s-b runs"], figures["limit-bound runs"]
    assert batch["mdboost_median"] * 2 <= batch["kernel_median"], batch
    assert batch["coverage"] >= 0.80, batch
    assert limit["mdboost_median"] < limit["kernel_median"], limit


def test_the_intervals_table_shows_each_class_at_5_10_and_30_s() -> None:
    """Coverage by class and by sampling interval in one table."""
    result = subprocess.run(
        [sys.executable, "scripts/backtest_forecast.py", "--intervals", *held_out_b()[:3]],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    lines = result.stdout.splitlines()
    assert all(f"every {n}:" in lines[1] for n in (1, 2, 6))
    overall = next(line for line in lines if line.startswith("overall"))
    assert overall.count("|") == 3 and "-" not in overall.split("|")[1]


def held_out_d() -> list[str]:
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-d*.csv"))]


@pytest.mark.parametrize("step", [1, 2, 6])
def test_the_range_holds_on_batch_d_recorded_after_the_freeze(step: int) -> None:
    """Batch d (three kernels, one VM at a time, recorded after FROZEN-d): the range holds the
    true finish on 80 % or more of the rows at 5, 10 and 30 s sampling, and the recovery held
    by its max through raw-device bursts beats finish=."""
    figures = backtest_json("--step", str(step), *held_out_d())
    assert len({k for k in figures if k.startswith("real5s-d")}) >= 3, "three kernels"
    assert figures["overall"]["coverage"] >= 0.80, figures["overall"]
    raw = figures["rawbursts runs"]
    assert raw["mdboost_median"] < raw["kernel_median"], raw


def test_a_held_grow_over_a_large_stripe_cache_beats_finish() -> None:
    """Batch d: held by a max of 2500 over a 16384 stripe cache, md kept 1.0-1.14x its max
    before the knee and 1.4-1.9x after it (6.1, 6.12). A stripe cache that keeps a third of
    md's throttle window in flight holds the grow loosely, so the ETA expects the knee: 5.6 and
    3.5 % against finish='s 16.7 and 10.1 % (the model that expected no knee: 23.9 and 16.3 %)."""
    steps = backtest_json(*[p for p in held_out_d() if "limit-steps" in p])["steps runs"]
    assert steps["mdboost_median"] * 2 <= steps["kernel_median"], steps


def held_out_f() -> list[str]:
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-f*.csv"))]


@pytest.mark.parametrize("step", [1, 2, 6])
def test_the_range_holds_on_batch_f_recorded_after_the_freeze(step: int) -> None:
    """Batch f (three kernels, recorded after FROZEN-f): the range holds the true finish on 80 %
    or more of the rows at 5, 10 and 30 s sampling, and runs held by their limits keep half of
    finish='s error."""
    figures = backtest_json("--step", str(step), *held_out_f())
    assert len({k for k in figures if k.startswith("real5s-f")}) == 3, "three kernels"
    assert figures["overall"]["coverage"] >= 0.80, figures["overall"]
    limit = figures["limit-bound runs"]
    assert limit["mdboost_median"] * 2 <= limit["kernel_median"], limit


def held_out_g() -> list[str]:
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-g*.csv"))]


@pytest.mark.parametrize("step", [1, 2, 6])
def test_the_range_holds_on_batch_g_recorded_after_the_freeze(step: int) -> None:
    """Batch g (10 runs on 5.10, 6.1 and 6.12, recorded 17:15-18:09 UTC after FROZEN-g, 16:30:24
    UTC): the range holds the true finish on 80 % or more of the rows at 5, 10 and 30 s, and
    mdboost's median error is below finish='s, overall and on the limit-bound runs."""
    figures = backtest_json("--step", str(step), *held_out_g())
    assert len({k for k in figures if k.startswith("real5s-g")}) == 3, "three kernels"
    assert figures["overall"]["coverage"] >= 0.80, figures["overall"]
    for key in ("overall", "limit-bound runs"):
        assert figures[key]["mdboost_median"] < figures[key]["kernel_median"], figures[key]


@pytest.mark.parametrize("step", [1, 2])
def test_batch_g_on_612_meets_the_error_bar_at_5_and_10_s(step: int) -> None:
    """Held out for FROZEN-g: on 6.12 (four runs) half finish='s median error at 5 and 10 s
    sampling (3.4 and 2.8 % against 7.1 and 6.7 %): its disk-bound raid5 grow ran flat through
    its knee as the frozen per-kernel figure said. Not at 30 s (8.1 % against 7.5 %, 19 rows)."""
    figures = backtest_json("--step", str(step), *held_out_g())
    g612 = figures["real5s-g612 runs"]
    assert g612["mdboost_median"] * 2 <= g612["kernel_median"], g612


def test_batch_g_as_training_data_keeps_half_finish_s_error() -> None:
    """Batch g missed the overall bar under FROZEN-g, the model it was held out for (8.2 %
    against 13.1 % at 5 s: its resyncs that speed up and recoveries with bursts). FROZEN-h's
    and FROZEN-j's burst rule was fitted on those runs, so batch g is training data now and
    this a regression guard, not evidence: 6.5 % against 13.1 %."""
    overall = backtest_json(*held_out_g())["overall"]
    assert overall["mdboost_median"] * 2 <= overall["kernel_median"], overall


def test_batch_fs_former_misses_now_beat_finish() -> None:
    """Batch f is training data since FROZEN-g (its rules were fitted on it): a regression guard,
    not evidence. Its misses under FROZEN-f, 6.12's disk-bound raid6 grow (flat through its
    knee) and the grows held over a 16384 cache with a smaller share of md's throttle window in
    flight, now beat finish= at 5 s sampling."""
    figures = backtest_json(*held_out_f())
    for key in ("grow6", "cache runs"):
        assert figures[key]["mdboost_median"] < figures[key]["kernel_median"], figures[key]


@pytest.mark.xfail(strict=True, reason="batch f misses the error bar (docs/forecast-batches.md)")
def test_batch_f_meets_the_error_bar() -> None:
    """Open: half finish='s median error overall on batch f (training data since FROZEN-g:
    6.3 % against 8.1 %, from 11.4 %). What is left: runs whose pace changes for good (a
    recovery that sped up once its bursts ended, a 4 GiB resync done in 140 s), and a 5.10 grow
    with one slow member. Strict: when it passes, this fails until the mark is removed."""
    overall = backtest_json(*held_out_f())["overall"]
    assert overall["mdboost_median"] * 2 <= overall["kernel_median"], overall


def held_out_h() -> list[str]:
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-h*.csv"))]


@pytest.mark.parametrize("step", [1, 2])
def test_batch_h_meets_the_error_bar_at_5_and_10_s(step: int) -> None:
    """Batch h (7 runs on 5.10, 6.1 and 6.12, recorded 19:12-19:39 UTC after FROZEN-h,
    19:12:16 UTC): half finish='s median error overall at 5 and 10 s sampling (FROZEN-h: 5.8
    and 7.0 % against 12.5 and 16.2 %), the range holding 80 % or more, and no class worse
    than finish=. Six of its runs were training data for FROZEN-j's burst rule since: a
    regression guard now, the evidence is in docs/forecast-batches.md."""
    figures = backtest_json("--step", str(step), *held_out_h())
    assert len({k for k in figures if k.startswith("real5s-h")}) == 3, "three kernels"
    overall = figures["overall"]
    assert overall["mdboost_median"] * 2 <= overall["kernel_median"], overall
    assert overall["coverage"] >= 0.80, overall
    worse = {k: v for k, v in figures.items() if v["mdboost_median"] > v["kernel_median"]}
    assert not worse, worse


def test_batch_h_holds_its_range_at_30_s() -> None:
    """At 30 s sampling (31 rows) the range still holds 80 % or more and mdboost is below
    finish= overall; not at half (9.1 % against 12.5 %), and the two resyncs that speed up are
    worse than finish= there (8 rows: 111.9 % against 63.0 %)."""
    overall = backtest_json("--step", "6", *held_out_h())["overall"]
    assert overall["coverage"] >= 0.80, overall
    assert overall["mdboost_median"] < overall["kernel_median"], overall


def held_out_j() -> list[str]:
    """Batch j plus i61's resync: every run recorded after FROZEN-j (19:39:24 UTC)."""
    runs = PROJECT_ROOT / "tests/fixtures/runs"
    resync = runs / "real5s-i61-resync-disk-speedup.csv"
    return [str(p) for p in sorted([*runs.glob("real5s-j*.csv"), resync])]


def test_batch_j_meets_the_error_bar_at_5_s() -> None:
    """Batch j (14 runs on 5.10, 6.1 and 6.12 plus i61's resync, recorded 19:39-20:40 UTC after
    FROZEN-j): half finish='s median error overall at 5 s sampling (FROZEN-j: 5.1 % against
    13.3 %; with the window-span fix made after it was measured, 4.4 %), and every kernel below
    finish=. Not at 10 s (6.5 % against 12.9 %), and the two raid5 4->5 grows with bursts are
    worse than finish= (15.7 % against 14.3 %: 5.10 sped up 1.25x past its knee, not 5x)."""
    figures = backtest_json(*held_out_j())
    overall = figures["overall"]
    assert overall["mdboost_median"] * 2 <= overall["kernel_median"], overall
    for key in [k for k in figures if k.startswith("real5s-")]:
        assert figures[key]["mdboost_median"] < figures[key]["kernel_median"], (key, figures[key])


@pytest.mark.parametrize("step", [1, 2, 6])
def test_the_range_holds_on_batch_j_at_5_10_and_30_s(step: int) -> None:
    """Coverage 97.3 / 95.1 / 94.1 % and mdboost below finish= overall at every interval."""
    overall = backtest_json("--step", str(step), *held_out_j())["overall"]
    assert overall["coverage"] >= 0.80, overall
    assert overall["mdboost_median"] < overall["kernel_median"], overall


def held_out_k() -> list[str]:
    """Batch k: 27 runs, nine on each of 5.10, 6.1 and 6.12, recorded after FROZEN-k."""
    return [str(p) for p in sorted((PROJECT_ROOT / "tests/fixtures/runs").glob("real5s-k*.csv"))]


def after_frozen_k() -> list[str]:
    """Every run recorded after FROZEN-k (21:14:25 UTC): five of batch i's list, then batch k."""
    runs = PROJECT_ROOT / "tests/fixtures/runs"
    first = [p for p in runs.glob("real5s-i*.csv") if "i61-resync" not in p.name]
    return sorted([*map(str, first), *held_out_k()])


def test_batch_k_meets_the_error_bar_at_5_s() -> None:
    """Batch k (27 runs, recorded 22:31-00:20 UTC after FROZEN-k, 21:14:25 UTC) at 5 s sampling,
    the live app's while a sync runs: 4.2 % against finish='s 8.4 % (half, by 0.03 points),
    coverage 99.6 %, and no class and no kernel worse than finish=."""
    figures = backtest_json(*held_out_k())
    assert {k for k in figures if k.startswith("real5s-k")} == {
        "real5s-k510 runs",
        "real5s-k61 runs",
        "real5s-k612 runs",
    }
    overall = figures["overall"]
    assert overall["mdboost_median"] * 2 <= overall["kernel_median"], overall
    assert overall["coverage"] >= 0.80, overall
    worse = {k: v for k, v in figures.items() if v["mdboost_median"] > v["kernel_median"]}
    assert not worse, worse


@pytest.mark.parametrize("step", [2, 6])
def test_batch_k_holds_its_range_at_10_and_30_s(step: int) -> None:
    """At 10 s 4.9 % against 9.1 % (not half), at 30 s 4.7 % against 9.6 %; coverage 97.0 and
    96.7 %. At 30 s the three resyncs that speed up are worse than finish= (25 rows)."""
    overall = backtest_json("--step", str(step), *held_out_k())["overall"]
    assert overall["coverage"] >= 0.80, overall
    assert overall["mdboost_median"] < overall["kernel_median"], overall


@pytest.mark.parametrize("step", [1, 2])
def test_every_run_after_frozen_k_beats_finish_in_every_class(step: int) -> None:
    """Batch k with the five runs of batch i's list recorded before it (aimed at batch j's miss,
    the raid5 4->5 grows with bursts): 4.9 / 6.1 % against 9.7 / 10.4 % at 5 / 10 s, coverage
    99.2 / 96.7 %, no class or kernel worse than finish=."""
    figures = backtest_json("--step", str(step), *after_frozen_k())
    assert figures["overall"]["coverage"] >= 0.80, figures["overall"]
    worse = {k: v for k, v in figures.items() if v["mdboost_median"] > v["kernel_median"]}
    assert not worse, worse
