"""Record real-kernel md runs for the forecast backtest, through ../shared/tools/mdvm.

    .venv/bin/python scripts/record_real_runs.py [--mdvm DIR] [--out tests/fixtures/runs]
    .venv/bin/python scripts/record_real_runs.py --from /tmp/mdvm-runs/<run>   # convert only

Boots Debian's kernel in QEMU with four HDD-like throttled 1 GiB disks and runs
scripts/mdvm_record_runs.sh inside (grows and recoveries, steady, with competing reads, with
tuning changes), then turns each run's 1 Hz samples into real-<class>-<kind>.csv with the
columns ts,done,total,finish_min,event,knee. done/total/finish_min are the kernel's own
/proc/mdstat figures; an event is marked on the first sample at or after it; the last row is
the first sample after the progress line vanished, at 100 %. Run one VM at a time.
"""

import argparse
import csv
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUEST_SCRIPT = REPO / "scripts" / "mdvm_record_runs.sh"
HDD_LIKE = "throttling.bps-total=60000000,throttling.iops-total=120"
PROGRESS = re.compile(
    r"(resync|recovery|reshape)\s*=\s*[\d.]+%\s*\((\d+)/(\d+)\)\s*finish=([\d.]+)min"
)
KNEE = {"grow": f"{2 / 3:.4f}", "recovery": ""}  # raid5 3 -> 4: old/new data disks = 2/3


def convert(run_dir: Path, out: Path, suffix: str = "") -> list[Path]:
    written = []
    for tsv in sorted((run_dir / "out" / "timeseries").glob("*.tsv")):
        phase = tsv.stem
        if phase == "idle":
            continue
        kind, run_class = phase.split("-", 1)
        events = []
        event_file = run_dir / "out" / f"events-{phase}.txt"
        if event_file.exists():
            for line in event_file.read_text().split("\n"):
                if line.strip():
                    ts, name = line.split()
                    events.append((float(ts), name))
        rows: list[list[object]] = []
        with tsv.open(newline="") as handle:
            for sample in csv.DictReader(handle, delimiter="\t"):
                if sample["md"] != "md0":
                    continue
                ts = float(sample["t_epoch"])
                match = PROGRESS.search(sample["mdstat_progress"])
                if match is None:
                    if rows:  # the run ended: this is the first sample without progress
                        total = rows[-1][2]
                        rows.append([f"{ts:.3f}", total, total, "", "", KNEE[kind]])
                        break
                    continue
                event = ""
                while events and events[0][0] <= ts:
                    event = events.pop(0)[1]
                done, total, finish = match.group(2), match.group(3), match.group(4)
                rows.append([f"{ts:.3f}", done, total, finish, event, KNEE[kind]])
        if not rows or rows[-1][1] != rows[-1][2]:
            print(f"{phase}: no complete run, skipped", file=sys.stderr)
            continue
        path = out / f"real-{run_class}-{kind}{suffix}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["ts", "done", "total", "finish_min", "event", "knee"])
            writer.writerows(rows)
        written.append(path)
    return written


def record(mdvm: Path, disk_size: str, runs: str | None) -> Path:
    run_dir = Path(f"/tmp/mdvm-runs/forecast-{time.strftime('%Y%m%d-%H%M%S')}")
    run_dir.mkdir(parents=True)
    env = dict(
        os.environ,
        RUN_DIR=str(run_dir),
        NDISKS="4",
        DISK_SIZE=disk_size,
        DRIVE_OPTS=HDD_LIKE,
        TIMEOUT="5400",
    )
    # The guest does not inherit this environment: the choice of runs goes into the script.
    script = run_dir / "record.sh"
    lines = GUEST_SCRIPT.read_text().split("\n")
    if runs:
        lines.insert(1, f"RUNS={runs!r}")
    script.write_text("\n".join(lines))
    subprocess.run([str(mdvm / "build.sh")], check=True)
    subprocess.run([str(mdvm / "run.sh"), str(script)], check=True, env=env)
    return run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mdvm", type=Path, default=REPO.parent / "shared" / "tools" / "mdvm")
    parser.add_argument("--from", dest="run_dir", type=Path, help="convert an existing run")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "runs")
    parser.add_argument("--disk-size", default="1G", help="size of each virtual disk")
    parser.add_argument("--runs", help="space-separated subset of the guest script's runs")
    parser.add_argument("--suffix", default="", help="appended to each file name, e.g. -2g")
    args = parser.parse_args(argv)
    run_dir = args.run_dir or record(args.mdvm, args.disk_size, args.runs)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in convert(run_dir, args.out, args.suffix):
        print(f"{path}: {sum(1 for _ in path.open()) - 1} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
