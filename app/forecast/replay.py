"""`mdboost forecast --replay FILE.csv`: the forecast as it would have been after every row.

FILE has the header `ts,done,total` (unix seconds, 1 KiB blocks) and may have more columns; these
are used when present, each row giving what the live app knows at that moment:
- `speed_min_kb_s`, `speed_max_kb_s`: the effective speed limits (KiB/s) at that row;
- `stripe_cache_size`: entries, on raid4/5/6;
- `event`: non-empty when a knob changed at that row (a tuning change such as "apply");
- `knee`: the grow's knee as a fraction of progress, e.g. 0.6667 for a raid5 3->4 grow;
- `kernel`: the running kernel's release (`uname -r`), as the live app reads it at start;
- `chunk_kb`: the array's chunk size, KiB (in the newer recordings; the model does not use it);
- `finish_min`: the kernel's finish= (kept for the backtest, not used by the model).
Unknown columns are ignored. Output: a header `ts,eta,low,high`, then one row per input row (unix
seconds; empty fields where there is no forecast), each using only the rows up to that one.
"""

import argparse
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from app.forecast.model import Forecast, RunProgress
from app.forecast.physics import Limits

LIMIT_COLUMNS = ("speed_min_kb_s", "speed_max_kb_s", "stripe_cache_size")


@dataclass(frozen=True)
class Row:
    """One recorded sample and what was known with it."""

    ts: float  # unix seconds
    done: int  # 1 KiB blocks
    total: int  # 1 KiB blocks
    finish_min: float | None = None  # the kernel's finish=, minutes
    limits: Limits | None = None  # None when the file has no limit columns
    event: str | None = None  # a knob changed at this row


@dataclass
class RecordedRun:
    rows: list[Row] = field(default_factory=list)
    knee: float | None = None
    kernel: str | None = None  # the kernel's release, when recorded


def read_run(handle: TextIO) -> RecordedRun:
    """Parse a run CSV; a row whose ts/done/total are not numbers raises ValueError naming it."""
    reader = csv.DictReader(handle)
    columns = set(reader.fieldnames or ())
    missing = {"ts", "done", "total"} - columns
    if missing:
        raise ValueError(f"missing column(s): {', '.join(sorted(missing))}")
    with_limits = any(name in columns for name in LIMIT_COLUMNS)
    run = RecordedRun()
    for line, values in enumerate(reader, start=2):
        try:
            ts, done = float(values["ts"]), int(float(values["done"]))
            total = int(float(values["total"]))
        except (TypeError, ValueError):
            raise ValueError(f"line {line}: ts, done and total must be numbers") from None
        limits = None
        if with_limits:
            cache = _number(values.get("stripe_cache_size"))
            limits = Limits(
                speed_min=_number(values.get("speed_min_kb_s")),
                speed_max=_number(values.get("speed_max_kb_s")),
                stripe_cache=int(cache) if cache is not None else None,
            )
        event = (values.get("event") or "").strip() or None
        run.rows.append(Row(ts, done, total, _number(values.get("finish_min")), limits, event))
        knee = _number(values.get("knee"))
        if knee is not None:
            run.knee = knee
        kernel = (values.get("kernel") or "").strip()
        if kernel:
            run.kernel = kernel
    return run


def replay(run: RecordedRun, knee: float | None = None) -> Iterator[tuple[Row, Forecast]]:
    """Each row with the forecast made from it and every earlier one."""
    progress = RunProgress(knee if knee is not None else run.knee, run.kernel)
    for row in run.rows:
        progress.add(row.ts, row.done, row.total, row.limits, row.event)
        yield row, progress.forecast()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replay", required=True, metavar="FILE.csv", help="'-' for stdin")
    parser.add_argument("--knee", type=float, help="grow knee as a fraction (overrides the file)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mdboost forecast", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Print the replayed forecasts of args.replay as CSV; 1 on a bad file, 2 if unreadable."""
    try:
        if args.replay == "-":
            recorded = read_run(sys.stdin)
        else:
            with Path(args.replay).open(newline="") as handle:
                recorded = read_run(handle)
    except OSError as error:
        print(f"mdboost forecast: cannot read {args.replay}: {error.strerror}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"mdboost forecast: {args.replay}: {error}", file=sys.stderr)
        return 1
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["ts", "eta", "low", "high"])
    for row, fc in replay(recorded, args.knee):
        out.writerow([_seconds(row.ts), _seconds(fc.eta), _seconds(fc.low), _seconds(fc.high)])
    return 0


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}".removesuffix(".0")
