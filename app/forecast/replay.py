"""`mdboost forecast --replay FILE.csv`: the forecast as it would have been after every row.

FILE has the header `ts,done,total` (unix seconds, blocks) and may have more columns; two are
used when present: `event` (a tuning change such as "apply" or "revert" at that row's time) and
`knee` (the grow's knee as a fraction of progress, e.g. 0.6667 for a raid5 3->4 grow).
Output: a header `ts,eta,low,high`, then one row per input row (unix seconds; empty fields
where there is no forecast yet), each using only the rows up to and including that one.
"""

import argparse
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from app.forecast.model import Event, Forecast, RunProgress, Sample


@dataclass
class RecordedRun:
    """A run read from CSV; finish_min is the kernel's finish= per row (None when absent)."""

    samples: list[Sample] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    finish_min: list[float | None] = field(default_factory=list)
    knee: float | None = None


def read_run(handle: TextIO) -> RecordedRun:
    """Parse a run CSV; a row whose ts/done/total are not numbers raises ValueError naming it."""
    reader = csv.DictReader(handle)
    missing = {"ts", "done", "total"} - set(reader.fieldnames or ())
    if missing:
        raise ValueError(f"missing column(s): {', '.join(sorted(missing))}")
    run = RecordedRun()
    for line, row in enumerate(reader, start=2):
        try:
            sample = (float(row["ts"]), int(float(row["done"])), int(float(row["total"])))
        except (TypeError, ValueError):
            raise ValueError(f"line {line}: ts, done and total must be numbers") from None
        run.samples.append(sample)
        run.finish_min.append(_number(row.get("finish_min")))
        kind = (row.get("event") or "").strip()
        if kind:
            run.events.append((sample[0], kind))
        knee = _number(row.get("knee"))
        if knee is not None:
            run.knee = knee
    return run


def replay(run: RecordedRun, knee: float | None = None) -> Iterator[tuple[Sample, Forecast]]:
    """Each sample with the forecast made from it and every earlier one."""
    knee = knee if knee is not None else run.knee
    progress = RunProgress()
    seen = 0
    for sample in run.samples:
        progress.add(*sample)
        while seen < len(run.events) and run.events[seen][0] <= sample[0]:
            seen += 1
        yield sample, progress.forecast(run.events[:seen], knee)


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
    for (ts, _, _), fc in replay(recorded, args.knee):
        out.writerow([_seconds(ts), _seconds(fc.eta), _seconds(fc.low), _seconds(fc.high)])
    return 0


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}".removesuffix(".0")
