"""Backtest mdboost's forecast against the kernel's finish= on recorded runs (issue 5).

    .venv/bin/python scripts/backtest_forecast.py [DIR ...] [--json]

DIR holds run CSVs (default tests/fixtures/runs) named <source>-<class>-<name>.csv, e.g.
sim-changes-a.csv or real-bursts-grow.csv. For every row of a run, the forecast made from the
rows so far (app/forecast/replay.replay) and the kernel's finish= of that row are compared with
the run's true finish (its first row at 100 %):
- error: |predicted - true finish| as % of the true time left, rows past 5 % progress;
- coverage: how often low <= true finish <= high, rows past 10 % progress (a row without a
  forecast counts as a miss).
Each run weighs the same within a class, however many rows it has.
"""

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from app.forecast.replay import RecordedRun, read_run, replay

ERROR_FROM = 0.05
COVERAGE_FROM = 0.10
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs"


@dataclass
class Points:
    """Weighted observations pooled over runs."""

    ours: list[tuple[float, float]] = field(default_factory=list)  # (error %, weight)
    kernel: list[tuple[float, float]] = field(default_factory=list)
    covered: list[tuple[float, float]] = field(default_factory=list)  # (1 or 0, weight)
    width: list[tuple[float, float]] = field(default_factory=list)  # (high - low as % of left)
    answered: list[tuple[float, float]] = field(default_factory=list)  # (1 if a forecast, weight)
    runs: int = 0

    def extend(self, other: "Points") -> None:
        self.ours += other.ours
        self.kernel += other.kernel
        self.covered += other.covered
        self.width += other.width
        self.answered += other.answered
        self.runs += other.runs


def true_finish(run: RecordedRun) -> float:
    for ts, done, total in run.samples:
        if total > 0 and done >= total:
            return ts
    return run.samples[-1][0]


def score(run: RecordedRun) -> Points:
    finish = true_finish(run)
    ours: list[float] = []
    kernel: list[float] = []
    covered: list[float] = []
    width: list[float] = []
    answered: list[float] = []
    for ((ts, done, total), fc), finish_min in zip(replay(run), run.finish_min, strict=True):
        left = finish - ts
        progress = done / total if total > 0 else 0.0
        if left <= 0 or progress < ERROR_FROM:
            continue
        if fc.eta is not None and fc.status == "ok":
            ours.append(abs(fc.eta - finish) / left * 100)
        if finish_min is not None:
            kernel.append(abs(ts + finish_min * 60 - finish) / left * 100)
        if progress >= COVERAGE_FROM:
            inside = fc.low is not None and fc.high is not None and fc.low <= finish <= fc.high
            covered.append(1.0 if inside else 0.0)
            answered.append(1.0 if fc.status == "ok" else 0.0)
            if fc.low is not None and fc.high is not None:
                width.append((fc.high - fc.low) / left * 100)
    return Points(
        ours=[(e, 1 / len(ours)) for e in ours],
        kernel=[(e, 1 / len(kernel)) for e in kernel],
        covered=[(c, 1 / len(covered)) for c in covered],
        width=[(w, 1 / len(width)) for w in width],
        answered=[(a, 1 / len(answered)) for a in answered],
        runs=1,
    )


def quantile(points: list[tuple[float, float]], q: float) -> float | None:
    if not points:
        return None
    ordered = sorted(points)
    goal = q * sum(w for _, w in ordered)
    running = 0.0
    for value, weight in ordered:
        running += weight
        if running >= goal:
            return value
    return ordered[-1][0]


def summary(points: Points) -> dict[str, float | int | None]:
    weight = sum(w for _, w in points.covered)
    return {
        "runs": points.runs,
        "kernel_median": quantile(points.kernel, 0.5),
        "kernel_p90": quantile(points.kernel, 0.9),
        "mdboost_median": quantile(points.ours, 0.5),
        "mdboost_p90": quantile(points.ours, 0.9),
        "coverage": sum(c * w for c, w in points.covered) / weight * 100 if weight else None,
        "range_width_median": quantile(points.width, 0.5),
        "answered": sum(a * w for a, w in points.answered) / weight * 100 if weight else None,
    }


def backtest(
    directories: list[Path], per_run: bool = False
) -> dict[str, dict[str, float | int | None]]:
    """Summaries by class, by source and overall (and by run)."""
    groups: dict[str, Points] = defaultdict(Points)
    for directory in directories:
        for path in sorted(directory.glob("*.csv")):
            source, run_class = ([*path.stem.split("-"), "", ""])[:2]
            with path.open(newline="") as handle:
                points = score(read_run(handle))
            for key in (run_class, f"{source} runs", "overall"):
                groups[key].extend(points)
            if per_run:
                groups[f"  {path.stem}"].extend(points)
    order = sorted(k for k in groups if k.startswith(" "))
    order += sorted(k for k in groups if " " not in k and k != "overall")
    order += [*sorted(k for k in groups if " " in k.strip()), "overall"]
    return {key: summary(groups[key]) for key in order if key in groups}


def table(results: dict[str, dict[str, float | int | None]]) -> str:
    def cell(value: float | int | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    lines = [
        "error = |predicted - true finish| / true time left (rows past 5 %); "
        "coverage of [low, high] past 10 %\n(range width: median high - low as % of the time "
        "left; answered: rows past 10 % with a forecast, the rest count as misses)",
        f"{'class':<26} {'runs':>4}  {'finish= median':>14} {'p90':>7}  "
        f"{'mdboost median':>14} {'p90':>7}  {'coverage':>8} {'range width':>11} {'answered':>8}",
    ]
    for key, row in results.items():
        lines.append(
            f"{key:<26} {row['runs']:>4}  {cell(row['kernel_median']) + ' %':>14} "
            f"{cell(row['kernel_p90']) + ' %':>7}  {cell(row['mdboost_median']) + ' %':>14} "
            f"{cell(row['mdboost_p90']) + ' %':>7}  {cell(row['coverage']) + ' %':>8} "
            f"{cell(row['range_width_median']) + ' %':>11} {cell(row['answered']) + ' %':>8}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[DEFAULT_DIR])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--runs", action="store_true", help="also one line per run")
    args = parser.parse_args(argv)
    results = backtest(args.dirs, args.runs)
    if not results:
        print("no runs found", file=sys.stderr)
        return 1
    print(json.dumps(results, indent=2) if args.json else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
