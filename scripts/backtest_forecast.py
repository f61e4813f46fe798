"""Backtest mdboost's forecast against the kernel's finish=, as docs/forecast.md judges it.

    .venv/bin/python scripts/backtest_forecast.py [FILE_OR_DIR ...] [--json] [--runs] [--step N]

Default: every CSV in tests/fixtures/runs. A run's name is <source>-<class>-<name>.csv, or
real5s-<batch>-<class>-<held>-<what>.csv for the 5 s real-kernel batches (batch a: the model
was tuned on it; batch b: recorded after the model was frozen); those are also grouped by what
held them (disk-bound, limit-bound runs) and what happened (steady, bursts, changes, slow runs).
For every row, the forecast made from the rows so far (`mdboost forecast --replay`) is compared
with the run's true finish (its first row at 100 %):
- error = |eta - true finish| / (true finish - now), over rows with at least 5 % progress and
  60 s truly left, and no knob change ahead of them (a person's later change is unforeseeable).
  Where mdboost shows no number the page shows finish=, so that row gets finish='s error;
- coverage = share of those rows past 10 % progress with low <= true finish <= high.
Figures are pooled over rows: median and p90, beside finish='s on the same rows, per class.
`--step N` keeps every Nth row only (a 1 s recording judged as if sampled every N s).
`--staircase S` replays each run as md reports a sync held low: the position moves only once
every S seconds (a window or checkpoint at a time), to the place the run had reached then.
`--intervals` prints, per class, finish='s and mdboost's median error and mdboost's coverage at
every row, every 2nd and every 6th (the real5s runs sampled every 5, 10 and 30 s) side by side.
"""

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.forecast.replay import RecordedRun, read_run, replay

ERROR_FROM = 0.05
COVERAGE_FROM = 0.10
MIN_LEFT_S = 60.0
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs"


@dataclass
class Points:
    """Rows pooled over runs."""

    ours: list[float] = field(default_factory=list)  # relative error
    kernel: list[float] = field(default_factory=list)  # finish='s, same rows
    covered: list[float] = field(default_factory=list)  # 1 or 0, rows past 10 %
    width: list[float] = field(default_factory=list)  # (high - low) / time left
    runs: int = 0

    def extend(self, other: "Points") -> None:
        self.ours += other.ours
        self.kernel += other.kernel
        self.covered += other.covered
        self.width += other.width
        self.runs += other.runs


def true_finish(run: RecordedRun) -> float:
    for row in run.rows:
        if row.total > 0 and row.done >= row.total:
            return row.ts
    return run.rows[-1].ts


def last_change(run: RecordedRun) -> float:
    """When a knob last changed (an event, or a limit that differs from the row before)."""
    last, previous = float("-inf"), None
    for row in run.rows:
        if row.event or (previous is not None and row.limits != previous):
            last = row.ts
        previous = row.limits
    return last


def thinned(run: RecordedRun, step: int) -> RecordedRun:
    """Every `step`th row, keeping each event on the next kept row and the last row."""
    if step <= 1:
        return run
    rows, pending = [], None
    for i, row in enumerate(run.rows):
        pending = pending or row.event
        if i % step == 0 or i == len(run.rows) - 1:
            rows.append(row if pending is None else replace(row, event=pending))
            pending = None
    return RecordedRun(rows, run.knee, run.kernel)


def staircase(run: RecordedRun, period_s: float) -> RecordedRun:
    """The run as md shows it when it advances by a window every `period_s` seconds: each row
    shows the position the run had at the latest window edge (interpolated between rows); the
    finish row stays as it is."""
    if period_s <= 0 or len(run.rows) < 2:
        return run
    rows, t0, i = [], run.rows[0].ts, 0
    for row in run.rows[:-1]:
        edge = t0 + (row.ts - t0) // period_s * period_s
        while i + 1 < len(run.rows) and run.rows[i + 1].ts <= edge:
            i += 1
        a, b = run.rows[i], run.rows[min(i + 1, len(run.rows) - 1)]
        share = (edge - a.ts) / (b.ts - a.ts) if b.ts > a.ts and b.total == a.total else 0.0
        done = int(a.done + max(0.0, min(1.0, share)) * (b.done - a.done))
        rows.append(replace(row, done=min(done, row.done)))
    return RecordedRun([*rows, run.rows[-1]], run.knee, run.kernel)


def score(run: RecordedRun) -> Points:
    finish, changed = true_finish(run), last_change(run)
    points = Points(runs=1)
    for row, fc in replay(run):
        left = finish - row.ts
        progress = row.done / row.total if row.total > 0 else 0.0
        if left < MIN_LEFT_S or progress < ERROR_FROM or row.ts < changed:
            continue
        kernel = None
        if row.finish_min is not None:
            kernel = abs(row.ts + row.finish_min * 60 - finish) / left
        ours = abs(fc.eta - finish) / left if fc.eta is not None else kernel
        if ours is None:
            continue
        points.ours.append(ours)
        points.kernel.append(kernel if kernel is not None else ours)
        if progress >= COVERAGE_FROM:
            inside = fc.low is not None and fc.high is not None and fc.low <= finish <= fc.high
            points.covered.append(1.0 if inside else 0.0)
            if fc.low is not None and fc.high is not None:
                points.width.append((fc.high - fc.low) / left)
    return points


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(points: Points) -> dict[str, float | int | None]:
    return {
        "runs": points.runs,
        "rows": len(points.ours),
        "kernel_median": quantile(points.kernel, 0.5),
        "kernel_p90": quantile(points.kernel, 0.9),
        "mdboost_median": quantile(points.ours, 0.5),
        "mdboost_p90": quantile(points.ours, 0.9),
        "coverage": sum(points.covered) / len(points.covered) if points.covered else None,
        "range_width_median": quantile(points.width, 0.5),
    }


def run_name(path: Path) -> tuple[str, str, list[str]]:
    """(source, class, traits) from the file name; a real5s run's traits are what held it
    (disk-bound, limit-bound) and what happened in it (steady, bursts, changes, slow)."""
    parts = [*path.stem.split("-"), "", "", "", ""]
    if parts[0] == "real5s":
        held, happened = parts[3], parts[4]
        return f"real5s-{parts[1]}", parts[2], [f"{held}-bound", happened]
    return parts[0], parts[1], []


def backtest(
    paths: list[Path], per_run: bool = False, step: int = 1, stairs_s: float = 0.0
) -> dict[str, dict[str, float | int | None]]:
    """Summaries by class, by source and overall (and by run)."""
    files = sorted(f for p in paths for f in (sorted(p.glob("*.csv")) if p.is_dir() else [p]))
    groups: dict[str, Points] = defaultdict(Points)
    for path in files:
        source, run_class, traits = run_name(path)
        with path.open(newline="") as handle:
            points = score(thinned(staircase(read_run(handle), stairs_s), step))
        for key in (run_class, *(f"{t} runs" for t in traits), f"{source} runs", "overall"):
            groups[key].extend(points)
        if per_run:
            groups[f"  {path.stem}"].extend(points)
    order = sorted(k for k in groups if k.startswith(" "))
    order += sorted(k for k in groups if " " not in k and k != "overall")
    order += [*sorted(k for k in groups if " " in k.strip()), "overall"]
    return {key: summary(groups[key]) for key in order if key in groups}


def table(results: dict[str, dict[str, float | int | None]]) -> str:
    def cell(value: float | int | None, percent: bool = True) -> str:
        if value is None:
            return "-"
        return f"{value * 100:.1f} %" if percent else str(value)

    lines = [
        "error = |eta - true finish| / true time left (rows past 5 %, 60 s left, no change "
        "ahead; no number = finish='s error); coverage of [low, high] past 10 %",
        f"{'class':<34} {'runs':>4} {'rows':>6}  {'finish= median':>14} {'p90':>8}  "
        f"{'mdboost median':>14} {'p90':>8}  {'coverage':>8} {'width':>8}",
    ]
    for key, row in results.items():
        lines.append(
            f"{key:<34} {row['runs']:>4} {row['rows']:>6}  {cell(row['kernel_median']):>14} "
            f"{cell(row['kernel_p90']):>8}  {cell(row['mdboost_median']):>14} "
            f"{cell(row['mdboost_p90']):>8}  {cell(row['coverage']):>8} "
            f"{cell(row['range_width_median']):>8}"
        )
    return "\n".join(lines)


INTERVAL_STEPS = (1, 2, 6)


def intervals_table(paths: list[Path], stairs_s: float = 0.0) -> str:
    """Median errors (finish=, mdboost) and coverage per class at each of INTERVAL_STEPS."""
    by_step = {step: backtest(paths, step=step, stairs_s=stairs_s) for step in INTERVAL_STEPS}

    def cell(value: float | int | None) -> str:
        return "-" if value is None else f"{value * 100:.1f}"

    header = f"{'class':<34} {'runs':>4}"
    for step in INTERVAL_STEPS:
        header += f" | every {step}: {'rows':>5} {'fin=':>6} {'ours':>6} {'cov':>6}"
    lines = [
        "median error (finish=, mdboost) and coverage, %, keeping every Nth row "
        "(real5s runs: N=1, 2, 6 is 5, 10, 30 s sampling)",
        header,
    ]
    for key, first in by_step[INTERVAL_STEPS[0]].items():
        line = f"{key:<34} {first['runs']:>4}"
        for step in INTERVAL_STEPS:
            row = by_step[step].get(key)
            if row is None:
                line += f" | {'':>8} {'-':>5} {'-':>6} {'-':>6} {'-':>6}"
                continue
            line += (
                f" | {'':>8} {row['rows']:>5} {cell(row['kernel_median']):>6} "
                f"{cell(row['mdboost_median']):>6} {cell(row['coverage']):>6}"
            )
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[DEFAULT_DIR])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--runs", action="store_true", help="also one line per run")
    parser.add_argument("--step", type=int, default=1, help="keep every Nth row")
    parser.add_argument(
        "--staircase", type=float, default=0.0, metavar="S", help="md's position moves every S s"
    )
    parser.add_argument(
        "--intervals", action="store_true", help="every row, every 2nd and every 6th, per class"
    )
    args = parser.parse_args(argv)
    if args.intervals:
        print(intervals_table(args.paths, args.staircase))
        return 0
    results = backtest(args.paths, args.runs, args.step, args.staircase)
    if not results:
        print("no runs found", file=sys.stderr)
        return 1
    print(json.dumps(results, indent=2) if args.json else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
