"""Benchmark: boost, auto-tune and a stripe cache of 16384 against the defaults on a real RAID5
3->4 grow, one trial per boot, interleaved, with the host's load beside every trial.

Each trial boots Debian's kernel in QEMU once (tests/realkernel/vmharness.py) and runs one grow
of tests/realkernel/guest/bench_autotune.py with one `mdboost serve` watching. The kinds run in
the order A B C D D C B A (--each 2). While a trial's VM runs this machine's 1-minute load is
sampled every 5 s; a trial whose mean is above --max-load-per-core per core (1.5: 3.0 on 2
cores) is flagged and run again (up to --retries times), because a benchmark taken on a busy
machine measures the machine (md's thread under emulation is short of CPU then). The tables are
built from clean trials only; the flagged ones are listed below them. Every trial also records
md's threads' CPU in the guest.

Conditions (--condition):
  flat      QEMU's throttle, 60 MB/s and 120 requests/s a disk (the README's table)
  spinning  tests/realkernel/hddsim.py as a 7200 rpm NAS disk: seeks of 1-15 ms plus half a
            turn (4.2 ms), a zoned media rate of 250 MB/s at the outer edge to 150 at the
            inner; mq-deadline in the guest
  reader    the flat disks, and a reader of the array 20 s of every 60 s during the grow
  starved   the flat disks, QEMU held to 0.6 of one host core by a cgroup quota (md's thread
            short of CPU, as on a weak NAS CPU); boost is pressed --press-after s into the grow

Each trial is appended to OUT/trials.jsonl as it ends; `--report FILE ...` prints the tables of
earlier files without booting. Needs root (or cached VM images). Prints figures; asserts nothing.

    flock-free: the script takes --lock for each boot, so other work runs between trials
    .venv/bin/python scripts/bench_boost.py --kernel 5.10 --condition flat --disk-mib 2048
"""

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkernel"))
import vmharness

KINDS = "defaults boost autotune 16384"
NAS_MEDIA_MB_S = (250.0, 150.0)  # outer, inner
STARVED_CORES = 0.6
READER_DUTY = "20/60"
LOAD_SAMPLE_S = 5.0


class LoadWatch(threading.Thread):
    """This machine's 1-minute load average every LOAD_SAMPLE_S while a VM runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(LOAD_SAMPLE_S):
            self.samples.append(os.getloadavg()[0])


@contextlib.contextmanager
def held(lock: Path | None) -> Iterator[None]:
    """The shared VM lock for one boot (none: no lock)."""
    if lock is None:
        yield
        return
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def order(kinds: list[str], each: int) -> list[str]:
    """A B C D D C B A, repeated until every kind has `each` trials."""
    sequence: list[str] = []
    while len(sequence) < each * len(kinds):
        forward = len(sequence) // len(kinds) % 2 == 0
        sequence += kinds if forward else kinds[::-1]
    return sequence


def one_trial(args: argparse.Namespace, image: vmharness.Image, kind: str) -> dict[str, Any]:
    """Boot once for one grow of `kind`; the guest's result with the host's load over the boot."""
    guest_env = (
        f"export ROUNDS=1 PLAN='{kind}' CHUNK_KB=64 LEVEL=5 MEMBERS=3 GROW_TO=4\n"
        f"export SETTLE=3 MEASURE=10 MAX_MEASURE=15 SERVER=1 SAMPLE_S={args.sample_s}\n"
        f"export READER={int(args.condition == 'reader')} READER_DUTY={READER_DUTY}\n"
        f"export PRESS_AFTER_S={args.press_after}\n"
    )
    throttle = vmharness.HDD_LIKE
    slow = 3.0 if args.condition == "starved" else 1.0
    load = LoadWatch()
    with held(args.lock):
        load.start()
        started = datetime.datetime.now(datetime.UTC)
        run = vmharness.boot(
            image,
            guest_env + vmharness.guest_python("bench_autotune.py"),
            disks=4,
            disk_size_mib=args.disk_mib,
            drive_opts="" if args.condition == "spinning" else throttle,
            spinning=args.condition == "spinning",
            media_mb_s=NAS_MEDIA_MB_S if args.condition == "spinning" else None,
            cpu_cores=STARVED_CORES if args.condition == "starved" else None,
            timeout_s=(args.disk_mib * 0.5 + 600) * slow,
            run_dir=Path(tempfile.mkdtemp(prefix=f"bench-boost-{kind}-", dir=args.out)),
        )
        load.stop.set()
    bench = run.out / "bench.json"
    cores = os.cpu_count() or 1
    samples = load.samples or [os.getloadavg()[0]]
    found: dict[str, Any] = {
        "condition": args.condition,
        "kind": kind,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "cores": cores,
        "load_mean": round(statistics.mean(samples), 2),
        "load_max": round(max(samples), 2),
        "flagged": statistics.mean(samples) > args.max_load_per_core * cores,
        "wall_s": round(run.wall_s, 1),
        "run_dir": str(run.run_dir),
    }
    if run.rc != 0 or not bench.exists():
        print(run.describe(), file=sys.stderr)
        return found | {"failed": True}
    trial = json.loads(bench.read_text())[0]
    return found | {"guest": trial}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=list(vmharness.KERNELS), default="5.10")
    parser.add_argument(
        "--condition", choices=("flat", "spinning", "reader", "starved"), default="flat"
    )
    parser.add_argument("--kinds", default=KINDS, help=f"trial kinds (default: {KINDS!r})")
    parser.add_argument("--each", type=int, default=2, help="clean trials wanted of each kind")
    parser.add_argument("--retries", type=int, default=2, help="re-runs of a flagged trial")
    parser.add_argument("--disk-mib", type=int, default=2048, help="size of each member disk")
    parser.add_argument("--sample-s", default="1", help="mdboost's tick in the guest, s")
    parser.add_argument(
        "--press-after", type=float, default=None, help="s into the grow boost is pressed"
    )
    parser.add_argument("--max-load-per-core", type=float, default=1.5)
    parser.add_argument("--lock", type=Path, default=None, help="the shared VM lock, per boot")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-boost"))
    parser.add_argument("--report", type=Path, nargs="*", help="print these trials.jsonl only")
    args = parser.parse_args()
    if args.report:
        trials = [json.loads(line) for path in args.report for line in path.open()]
        report(trials)
        return 0
    if args.press_after is None:
        args.press_after = 30.0 if args.condition == "starved" else 0.0
    args.out.mkdir(parents=True, exist_ok=True)
    vmharness.check_repo_venv()
    image = vmharness.build_image(args.kernel)
    log = args.out / "trials.jsonl"
    done = []
    for kind in order(args.kinds.split(), args.each):
        for attempt in range(args.retries + 1):
            trial = one_trial(args, image, kind) | {"attempt": attempt + 1}
            with log.open("a") as out:  # every run's trials, for --report
                out.write(json.dumps(trial) + "\n")
            done.append(trial)
            print(summary_line(trial), flush=True)
            if not trial["flagged"] and not trial.get("failed"):
                break
    report(done)
    print(f"(these trials and earlier runs' in the same --out: {log})")
    return 0


def summary_line(trial: dict[str, Any]) -> str:
    guest = trial.get("guest") or {}
    seconds = f"{guest['seconds']:.1f} s" if guest else "failed"
    flag = " FLAGGED (host load)" if trial["flagged"] else ""
    return (
        f"{trial['date']} {trial['condition']} {guest.get('kernel', '?')} {trial['kind']}: "
        f"{seconds}, load mean {trial['load_mean']} max {trial['load_max']}; {md_cpu(guest)}"
        f"{put_back(guest)}{flag}"
    )


def md_cpu(guest: dict[str, Any]) -> str:
    threads = (guest.get("cpu") or {}).get("md_threads_cpu_share") or {}
    return ", ".join(f"{name} {share:.0%}" for name, share in threads.items()) or "md: -"


def put_back(guest: dict[str, Any]) -> str:
    found = guest.get("put_back")
    if not found:
        return ""
    return (
        f"; mdboost put boost back: x{found['ratio']} ({found['before_kb_s']} -> "
        f"{found['after_kb_s']} KiB/s, noise {found['noise_kb_s']})"
    )


def report(trials: list[dict[str, Any]]) -> None:
    """Per condition and kernel: each kind's clean trials (time, load), mean, against the
    defaults; then the flagged and failed ones."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for trial in trials:
        kernel = (trial.get("guest") or {}).get("kernel", "?")
        groups.setdefault((trial["condition"], kernel), []).append(trial)
    for (condition, kernel), group in sorted(groups.items()):
        clean = [t for t in group if not t["flagged"] and not t.get("failed")]
        print(f"\n{condition}, Linux {kernel}: {len(clean)} clean of {len(group)} trials")
        means: dict[str, float] = {}
        for kind in dict.fromkeys(t["kind"] for t in group):
            mine = [t for t in clean if t["kind"] == kind]
            if not mine:
                print(f"  {kind:<9} not yet measured cleanly")
                continue
            means[kind] = statistics.mean(t["guest"]["seconds"] for t in mine)
            ratio = (
                f", {means['defaults'] / means[kind]:.2f}x the defaults"
                if "defaults" in means and kind != "defaults"
                else ""
            )
            each = "; ".join(
                f"{t['guest']['seconds']:.1f} s (load {t['load_mean']}, {md_cpu(t['guest'])}"
                f"{put_back(t['guest'])})"
                for t in mine
            )
            print(f"  {kind:<9} mean {means[kind]:.1f} s{ratio}: {each}")
        for t in group:
            if t["flagged"] or t.get("failed"):
                print(f"  not counted: {summary_line(t)}")


if __name__ == "__main__":
    sys.exit(main())
