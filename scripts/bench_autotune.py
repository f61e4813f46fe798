"""Benchmark: auto-tune against a manual stripe-cache sweep on a real RAID5 3->4 reshape (issue 18).

Boots Debian's kernel in QEMU (tests/realkernel/vmharness.py) once, every virtual disk throttled
like a hard disk, DSM-like defaults (stripe_cache_size 256, speed_limit_min 10000, max 200000,
read_ahead_kb 384). First the manual sweep: one fresh reshape per candidate stripe cache, set
right after the grow starts. Then auto-tune on a fresh reshape of the same setup, pressed over
mdboost's HTTP API once the sampler has seen the reshape. `--rounds N` repeats the set in a
rotated order. Prints figures: auto-tune's choice against the sweep's best speed, and the whole
auto-tuned run against DSM's defaults (256). Asserts nothing. Needs root (or a cached VM image).

    .venv/bin/python scripts/bench_autotune.py [--rounds 1] [--disk-mib 1024] [--reader]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkernel"))
import vmharness


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="sweep + auto-tune sets")
    parser.add_argument("--disk-mib", type=int, default=1024, help="size of each member disk")
    parser.add_argument("--mb-s", type=int, default=60, help="throttle per disk, MB/s (r+w)")
    parser.add_argument("--iops", type=int, default=120, help="throttle per disk, I/O per s")
    parser.add_argument("--reader", action="store_true", help="a competing O_DIRECT reader")
    parser.add_argument("--candidates", default="256 1024 4096 16384 32768")
    parser.add_argument(
        "--steps", default="2 5 10", help="auto-tune's settle, min and max measure (s)"
    )
    args = parser.parse_args()

    vmharness.check_repo_venv()
    image = vmharness.build_image()
    throttle = f"throttling.bps-total={args.mb_s * 1_000_000},throttling.iops-total={args.iops}"
    settle, measure, max_measure = args.steps.split()
    guest_env = (
        f"export ROUNDS={args.rounds} READER={int(args.reader)} CANDIDATES='{args.candidates}'\n"
        f"export SETTLE={settle} MEASURE={measure} MAX_MEASURE={max_measure}\n"
    )
    trials_per_round = len(args.candidates.split()) + 1
    run = vmharness.boot(
        image,
        guest_env + vmharness.guest_python("bench_autotune.py"),
        disks=4,
        disk_size_mib=args.disk_mib,
        drive_opts=throttle,
        timeout_s=trials_per_round * args.rounds * args.disk_mib * 0.5 + 600,
    )
    bench = run.out / "bench.json"
    if run.rc != 0 or not bench.exists():
        print(run.describe(), file=sys.stderr)
        if not bench.exists():
            return 1
    trials = json.loads(bench.read_text())
    report(trials, args, image)
    print(f"(raw results: {bench})")
    return 0 if run.rc == 0 else 1


def report(trials: list[dict], args: argparse.Namespace, image: vmharness.Image) -> None:
    print(
        f"kernel {image.kernel_version}, QEMU TCG, 2 vCPUs; 4 disks x {args.disk_mib} MiB, each "
        f"throttled to {args.mb_s} MB/s and {args.iops} IOPS; RAID5 64 KiB chunks, grow 3->4, "
        f"DSM-like defaults; {'a competing O_DIRECT reader' if args.reader else 'no other I/O'}"
    )
    print(f"{'trial':>5} {'setting':<16} {'time s':>7} {'reshape MB/s':>13}")
    for t in trials:
        setting = f"cache {t['stripe_cache']}" if t["kind"] == "fixed" else "auto-tune"
        print(f"{t['trial']:>5} {setting:<16} {t['seconds']:>7.1f} {t['reshape_mb_s']:>13.2f}")
    fixed = [t for t in trials if t["kind"] == "fixed"]
    speed = {
        value: statistics.mean(t["reshape_mb_s"] for t in fixed if t["stripe_cache"] == value)
        for value in sorted({t["stripe_cache"] for t in fixed})
    }
    best_value = max(speed, key=lambda v: speed[v])
    print(
        "manual sweep, mean reshape MB/s per device: "
        + ", ".join(f"{v}: {s:.2f}" for v, s in speed.items())
    )
    print(f"best: stripe_cache_size {best_value} at {speed[best_value]:.2f} MB/s")
    defaults = statistics.mean(t["seconds"] for t in fixed if t["stripe_cache"] == 256)
    for t in (t for t in trials if t["kind"] == "autotune"):
        sweep = t["sweep"]
        chosen = (sweep.get("chosen") or {}).get("stripe_cache_size")
        print(
            f"auto-tune trial {t['trial']}: sweep {sweep['state']} after {t['sweep_s']:.0f} s "
            f"({sweep['reason']}); steps measured:"
        )
        for step in sweep["steps"]:
            score = f" x{step['score']:.2f}" if step["score"] is not None else ""
            note = f" ({step['note']})" if step["note"] else ""
            kb_s = step["speed_kb_s"]
            shown = f"{kb_s * 1024 / 1e6:6.2f} MB/s" if kb_s is not None else "     -     "
            print(
                f"    {step['knob']:<18} {step['value']:>6} {step['role']:<9} {shown}{score}{note}"
            )
        if chosen in speed:
            share = speed[chosen] / speed[best_value]
            print(
                f"  chose stripe_cache_size {chosen}: {share:.1%} of the sweep's best speed "
                f"({'meets' if share >= 0.95 else 'MISSES'} >= 95 %)"
            )
        else:
            print(f"  chose stripe_cache_size {chosen}: not among the swept values")
        ratio = defaults / t["seconds"]
        print(
            f"  whole run {t['seconds']:.1f} s vs DSM defaults {defaults:.1f} s: {ratio:.2f}x "
            f"faster ({'meets' if ratio >= 1.3 else 'MISSES'} >= 1.3x)"
        )


if __name__ == "__main__":
    sys.exit(main())
