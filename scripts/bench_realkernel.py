"""Benchmark: a real RAID5 3->4 reshape on HDD-like disks, DSM-like defaults vs mdboost's boost.

Boots Debian's kernel in QEMU (tests/realkernel/vmharness.py) once, with every virtual disk
throttled like a hard disk, and alternates trials (A B A B ...) with a competing O_DIRECT reader
on the array: A = DSM-like defaults (stripe_cache_size 256, speed_limit_min 10000, max 200000,
read_ahead_kb 384), B = the same, then mdboost's boost toggle pressed over its HTTP API right
after the grow starts. Prints figures; asserts nothing. Needs root (or a cached VM image).

    .venv/bin/python scripts/bench_realkernel.py [--kernel 5.10] [--pairs 2] [--disk-mib 512]
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
    parser.add_argument("--pairs", type=int, default=2, help="A/B pairs (default 2)")
    parser.add_argument("--disk-mib", type=int, default=512, help="size of each member disk")
    parser.add_argument("--mb-s", type=int, default=60, help="throttle per disk, MB/s (r+w)")
    parser.add_argument("--iops", type=int, default=120, help="throttle per disk, I/O per s")
    parser.add_argument(
        "--kernel",
        choices=list(vmharness.KERNELS),
        default=vmharness.selected_kernel(),
        help="kernel generation to boot (default: REALKERNEL_KERNEL, else 6.1)",
    )
    args = parser.parse_args()

    vmharness.check_repo_venv()
    image = vmharness.build_image(args.kernel)
    throttle = f"throttling.bps-total={args.mb_s * 1_000_000},throttling.iops-total={args.iops}"
    run = vmharness.boot(
        image,
        f"export PAIRS={args.pairs}\n" + vmharness.guest_python("bench_reshape.py"),
        disks=4,
        disk_size_mib=args.disk_mib,
        drive_opts=throttle,
        timeout_s=600 * args.pairs + 300,
    )
    if run.rc != 0:
        print(run.describe(), file=sys.stderr)
        return 1
    trials = json.loads((run.out / "bench.json").read_text())
    print_table(trials, args, image)
    return 0


def print_table(trials: list[dict], args: argparse.Namespace, image: vmharness.Image) -> None:
    print(
        f"kernel {image.kernel_version}, QEMU TCG, 2 vCPUs; 4 disks x {args.disk_mib} MiB, "
        f"each throttled to {args.mb_s} MB/s and {args.iops} IOPS; RAID5 64 KiB chunks, "
        "grow 3->4, competing O_DIRECT reader on the array"
    )
    print(
        f"{'trial':>5} {'preset':<6} {'time s':>7} {'reshape MB/s':>13} {'reader MB/s':>12} "
        f"{'stripe cache':>14}"
    )
    for t in trials:
        print(
            f"{t['trial']:>5} {t['kind']:<6} {t['seconds']:>7.1f} {t['reshape_mb_s']:>13.2f} "
            f"{t['reader_mb_s']:>12.2f} {t['stripe_cache_at_grow']:>6}->"
            f"{t['stripe_cache_during']:<6}"
        )
    by_kind = {k: [t for t in trials if t["kind"] == k] for k in ("dsm", "boost")}
    mean = {k: statistics.mean(t["seconds"] for t in v) for k, v in by_kind.items()}
    rate = {k: statistics.mean(t["reshape_mb_s"] for t in v) for k, v in by_kind.items()}
    for kind, label in (("dsm", "A DSM-like"), ("boost", "B boost")):
        times = [t["seconds"] for t in by_kind[kind]]
        spread = f" (min {min(times):.1f}, max {max(times):.1f})" if len(times) > 1 else ""
        print(f"{label:<11} mean {mean[kind]:.1f} s{spread}, {rate[kind]:.2f} MB/s per device")
    print(f"ratio (A time / B time): {mean['dsm'] / mean['boost']:.2f}x")
    # Physical limit: a 3->4 grow reads the old data (parity is recomputed, not read: 2/3 of
    # each old member) and writes the new layout (data + parity = 8/3 of a member over 4 disks,
    # 2/3 each). The busiest disk moves 4/3 of a member through a throttle that caps reads +
    # writes together.
    per_device_mb = trials[0]["per_device_mib"] * 1.048576
    limit_s = per_device_mb * 4 / 3 / args.mb_s
    print(
        f"physical limit of the throttle (bandwidth only, reader idle): {limit_s:.1f} s, "
        f"{per_device_mb / limit_s:.1f} MB/s per device; the {args.iops} IOPS cap binds first "
        f"whenever md's requests average under {args.mb_s * 1000 / args.iops:.0f} KB"
    )


if __name__ == "__main__":
    sys.exit(main())
