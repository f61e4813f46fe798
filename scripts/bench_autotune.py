"""Benchmark: auto-tune against a manual stripe-cache sweep on a real RAID5 3->4 reshape.

Boots Debian's kernel in QEMU (tests/realkernel/vmharness.py) once, every virtual disk throttled
like a hard disk (or, with --spinning, served by hddsim.py with a moving head), a RAID5 3->4 grow
unless told (--level, --members, --grow-to, --chunk-kb), DSM-like defaults (stripe_cache_size
256, which mdadm raises when the chunk needs more: 513 for 512 KiB chunks; speed_limit_min 10000,
max 200000; read_ahead_kb 384). First the manual sweep: one
fresh reshape per candidate stripe cache, set right after the grow starts ("defaults" leaves
mdadm's value). Then auto-tune on a fresh reshape of the same setup, pressed over mdboost's HTTP
API once the sampler has seen the reshape; "boost" presses mdboost's boost toggle instead. `--rounds
N` repeats the plan in a rotated order; `--merge FILE` (again for more files) adds the trials of
earlier runs' bench.json (same flags) to the figures: one trial per boot, interleaved A B A B,
lets other work on a shared machine take turns between trials. One mdboost process runs in the
guest in every trial, started and settled before the first grow (`--no-server`: none, the
plain setup for defaults and fixed caches); each trial prints where the guest's CPU went (mdboost,
md0's threads, the bench's polling), since under emulation md's raid5 thread is CPU-bound.
Prints figures: each candidate's speed (whole run, and before the grow's knee, where auto-tune
measures), auto-tune's choice against the sweep's best, the auto-tuned run against the
defaults, and this machine's load meanwhile. Asserts nothing. Needs root (or a cached VM image).

    nice .venv/bin/python scripts/bench_autotune.py [--kernel 5.10] [--disk-mib 2048] [--plan "..."]
"""

import argparse
import json
import os
import statistics
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realkernel"))
import vmharness

PLAN = "defaults 1024 4096 16384 32768 autotune"


class LoadWatch(threading.Thread):
    """This machine's 1-minute load average every 30 s while the VM runs (2 cores, shared)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(30):
            self.samples.append(os.getloadavg()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="times the plan runs")
    parser.add_argument("--disk-mib", type=int, default=2048, help="size of each member disk")
    parser.add_argument("--mb-s", type=int, default=60, help="throttle per disk, MB/s (r+w)")
    parser.add_argument("--iops", type=int, default=120, help="throttle per disk, I/O per s")
    parser.add_argument(
        "--spinning",
        action="store_true",
        help="disks with a moving head (tests/realkernel/hddsim.py) instead of QEMU's throttle",
    )
    parser.add_argument("--chunk-kb", type=int, default=64, help="RAID chunk (DSM's: 64)")
    parser.add_argument("--level", type=int, choices=(5, 6), default=5, help="RAID level")
    parser.add_argument("--members", type=int, default=3, help="disks before the grow")
    parser.add_argument("--grow-to", type=int, default=4, help="disks after the grow")
    parser.add_argument("--reader", action="store_true", help="a competing O_DIRECT reader")
    parser.add_argument(
        "--plan",
        default=PLAN,
        help="trials in order: defaults, values (16384+threads2: and 2 raid5 worker threads, "
        "set before the grow), autotune, boost, floor (boost's limits alone: md0's min 600000 "
        "and max 2000000 KiB/s, written right after the grow starts)",
    )
    parser.add_argument(
        "--merge", type=Path, action="append", default=[], help="an earlier bench.json to add"
    )
    parser.add_argument(
        "--no-boot", action="store_true", help="report the --merge files' trials; boot nothing"
    )
    parser.add_argument(
        "--no-server",
        action="store_true",
        help="no mdboost in the guest (defaults and fixed caches only): the plain setup",
    )
    parser.add_argument(
        "--sample-s", default="1", help="mdboost's tick in the guest, s (the box's default: 5)"
    )
    parser.add_argument(
        "--steps", default="5 40 60", help="auto-tune's settle, min and max measure (s)"
    )
    parser.add_argument(
        "--kernel",
        choices=list(vmharness.KERNELS),
        default=vmharness.selected_kernel(),
        help="kernel generation to boot (default: REALKERNEL_KERNEL, else 6.1)",
    )
    args = parser.parse_args()

    if args.no_boot:  # the figures of the --merge files alone
        merged = [t for path in args.merge for t in json.loads(path.read_text())]
        report(merged, args, None, [], 0.0)
        return 0
    if args.no_server and {"autotune", "boost"} & set(args.plan.split()):
        parser.error("--no-server runs defaults and fixed caches only")
    vmharness.check_repo_venv()
    image = vmharness.build_image(args.kernel)
    throttle = f"throttling.bps-total={args.mb_s * 1_000_000},throttling.iops-total={args.iops}"
    settle, measure, max_measure = args.steps.split()
    guest_env = (
        f"export ROUNDS={args.rounds} READER={int(args.reader)} PLAN='{args.plan}'\n"
        f"export CHUNK_KB={args.chunk_kb} LEVEL={args.level} MEMBERS={args.members} "
        f"GROW_TO={args.grow_to}\n"
        f"export SETTLE={settle} MEASURE={measure} MAX_MEASURE={max_measure}\n"
        f"export SERVER={int(not args.no_server)} SAMPLE_S={args.sample_s}\n"
    )
    trials = len(args.plan.split()) * args.rounds
    load = LoadWatch()
    load.start()
    run = vmharness.boot(
        image,
        guest_env + vmharness.guest_python("bench_autotune.py"),
        disks=args.grow_to,
        disk_size_mib=args.disk_mib,
        drive_opts="" if args.spinning else throttle,
        spinning=args.spinning,
        timeout_s=trials * args.disk_mib * 0.5 + 600,
    )
    load.stop.set()
    bench = run.out / "bench.json"
    if run.rc != 0 or not bench.exists():
        print(run.describe(), file=sys.stderr)
        if not bench.exists():
            return 1
    found = json.loads(bench.read_text())
    earlier = [t for path in args.merge for t in json.loads(path.read_text())]
    report(earlier + found, args, image, load.samples, run.wall_s)
    print(f"(raw results: {bench})")
    return 0 if run.rc == 0 else 1


def report(
    trials: list[dict],
    args: argparse.Namespace,
    image: vmharness.Image | None,
    load: list[float],
    wall_s: float,
) -> None:
    print(
        f"kernel {image.kernel_version if image else ', '.join(kernels(trials))}, QEMU TCG, "
        "2 vCPUs; "
        f"{args.grow_to} disks x {args.disk_mib} MiB, each "
        + (
            "spinning (hddsim.py: 7200 rpm, 1-15 ms seeks, 60 MB/s, mq-deadline)"
            if args.spinning
            else f"throttled to {args.mb_s} MB/s and {args.iops} IOPS"
        )
        + f"; RAID{args.level} {args.chunk_kb} KiB chunks, grow {args.members}->{args.grow_to}, "
        f"DSM-like defaults; {'a competing O_DIRECT reader' if args.reader else 'no other I/O'}"
    )
    if load:
        print(
            f"this machine's load (1-min average, 2 cores) during the {wall_s / 60:.0f} min boot: "
            f"mean {statistics.mean(load):.2f}, max {max(load):.2f} ({len(load)} samples)"
        )
    print(f"{'trial':>5} {'setting':<16} {'time s':>7} {'knee s':>7} {'MB/s':>6} {'pre-knee':>8}")
    for t in trials:
        setting = {"autotune": "auto-tune", "boost": "boost", "floor": "limits 600000/2000000"}.get(
            t["kind"], f"cache {t['stripe_cache']}"
        )
        setting += f" +{t['group_thread_cnt']} thr" if t["kind"] == "threads" else ""
        setting += " (dflt)" if t["kind"] == "defaults" else ""
        knee = f"{t['knee_s']:7.1f}" if t.get("knee_s") else "      -"
        before = f"{t['before_knee_mb_s']:8.2f}" if t.get("before_knee_mb_s") else "       -"
        print(
            f"{t['trial']:>5} {setting:<16} {t['seconds']:>7.1f} {knee} "
            f"{t['reshape_mb_s']:>6.2f} {before}{requests(t)}"
        )
        if t.get("cpu"):
            print("      " + cpu_line(t))
        if t.get("not_reverted"):
            print(f"      NOT REVERTED (before the press, after the revert): {t['not_reverted']}")
        elif "not_reverted" in t:
            print("      every knob read back as before the press after mdboost's revert")
    fixed = [t for t in trials if t["kind"] in ("fixed", "defaults")]
    values = sorted({t["stripe_cache"] for t in fixed})
    speed = {
        v: statistics.mean(t["reshape_mb_s"] for t in fixed if t["stripe_cache"] == v)
        for v in values
    }
    best_value = max(speed, key=lambda v: speed[v]) if speed else None
    count = {v: sum(t["stripe_cache"] == v for t in fixed) for v in values}
    if best_value is not None:
        print(
            "manual sweep, mean reshape MB/s per device over the whole run (trials): "
            + ", ".join(f"{v}: {s:.2f} ({count[v]})" for v, s in speed.items())
            + " (256: DSM's value, left as mdadm left it)"
        )
        print(f"best: stripe_cache_size {best_value} at {speed[best_value]:.2f} MB/s")
    defaults = [t["seconds"] for t in trials if t["kind"] == "defaults"]
    compare(trials, "defaults", "boost", 1.6)
    compare(trials, "defaults", "floor", 1.6)
    compare(trials, "defaults", "threads", 1.6)
    compare(trials, "defaults", "autotune", 1.3)
    fixed_best = [t for t in fixed if t["stripe_cache"] == best_value]
    if fixed_best:
        compare(trials, best_value, "autotune", 0.95)
    for t in (t for t in trials if t["kind"] == "autotune"):
        if "sweep" not in t:
            print(
                f"auto-tune trial {t['trial']}: the reshape ended before the sweep did (mdboost "
                f"reverted it): {t['seconds']:.1f} s, {t['reshape_mb_s']:.2f} MB/s; "
                "use bigger disks"
            )
            continue
        sweep = t["sweep"]
        chosen = (sweep.get("chosen") or {}).get("stripe_cache_size")
        share = t.get("sweep_done_share")
        at = f", at {share:.0%} of the reshape" if share is not None else ""
        print(
            f"auto-tune trial {t['trial']}: sweep {sweep['state']} after {t['sweep_s'] or 0:.0f} s"
            f"{at} ({sweep['reason']}); steps measured:"
        )
        for step in sweep["steps"]:
            score = f" x{step['score']:.2f}" if step["score"] is not None else ""
            note = f" ({step['note']})" if step["note"] else ""
            kb_s = step["speed_kb_s"]
            shown = f"{kb_s * 1024 / 1e6:6.2f} MB/s" if kb_s is not None else "     -     "
            print(
                f"    {step['knob']:<18} {step['value']:>6} {step['role']:<9} {shown}{score}{note}"
            )
        if best_value is None:
            pass
        elif chosen in speed:
            got = speed[chosen] / speed[best_value]
            print(
                f"  chose stripe_cache_size {chosen}: {got:.1%} of the sweep's best speed "
                f"({'meets' if got >= 0.95 else 'MISSES'} >= 95 %)"
            )
        else:
            print(f"  chose stripe_cache_size {chosen}: not among the swept values")
        if defaults:
            ratio = statistics.mean(defaults) / t["seconds"]
            print(
                f"  whole run {t['seconds']:.1f} s vs defaults {statistics.mean(defaults):.1f} s "
                f"(mean of {len(defaults)}): {ratio:.2f}x faster "
                f"({'meets' if ratio >= 1.3 else 'MISSES'} >= 1.3x)"
            )


def cpu_line(trial: dict) -> str:
    """Where the guest's CPU went over a trial: mdboost's process (or none), md0's threads, the
    bench's own polling, and the share of both vCPUs busy."""
    cpu = trial["cpu"]
    threads = ", ".join(f"{k} {v:.0%}" for k, v in cpu["md_threads_cpu_share"].items())
    server = (
        f"mdboost {cpu['mdboost_cpu_s']:.1f} CPU s ({cpu['mdboost_cpu_s'] / trial['seconds']:.1%})"
        if trial.get("mdboost") and cpu.get("mdboost_cpu_s") is not None
        else "no mdboost"
    )
    return (
        f"guest CPU: {server}; {threads} of a core; bench {cpu['bench_cpu_s']:.1f} s; "
        f"vCPUs {cpu['guest_busy_share']:.0%} busy"
    )


def kernels(trials: list[dict]) -> list[str]:
    """The kernels the trials ran on, as each recorded it (older trials did not)."""
    return sorted({t.get("kernel", "(not recorded)") for t in trials})


def requests(trial: dict) -> str:
    """The old members' mean requests over the run (5.10 makes 3x fewer than 6.1): count and size
    of reads and writes, when the trial recorded its diskstats."""
    stats = trial.get("diskstats")
    if not stats:
        return ""
    # the old members: a grow's new disk only writes
    disks = [d for d in stats.values() if d["reads"] > 1] or list(stats.values())

    def mean(key: str) -> float:
        found = [d[key] for d in disks if d[key] is not None]
        return statistics.mean(found) if found else 0.0

    return (
        f"  per old member: {mean('reads'):.0f} reads of {mean('read_kib'):.0f} KiB "
        f"({mean('read_ms'):.0f} ms), {mean('writes'):.0f} writes of {mean('write_kib'):.0f} KiB "
        f"({mean('write_ms'):.0f} ms); {disks[0]['scheduler']}"
    )


def compare(trials: list[dict], base: str | int, kind: str, bar: float) -> None:
    """Mean whole-run and to-the-knee times of `kind` against `base` (a kind, or a fixed stripe
    cache value), with each side's trials, and whether the ratio meets `bar`."""

    def pick(which: str | int) -> list[dict]:
        if isinstance(which, int):
            return [t for t in trials if t["kind"] == "fixed" and t["stripe_cache"] == which]
        return [t for t in trials if t["kind"] == which]

    a, b = pick(base), pick(kind)
    if not a or not b:
        return
    whole = statistics.mean(t["seconds"] for t in a) / statistics.mean(t["seconds"] for t in b)
    knees_a = [t["knee_s"] for t in a if t.get("knee_s")]
    knees_b = [t["knee_s"] for t in b if t.get("knee_s")]
    knee = (
        f", to the knee {statistics.mean(knees_a) / statistics.mean(knees_b):.2f}x"
        if knees_a and knees_b
        else ""
    )
    label = f"cache {base}" if isinstance(base, int) else base
    times = " ".join(f"{t['seconds']:.1f}" for t in a), " ".join(f"{t['seconds']:.1f}" for t in b)
    verdict = "meets" if whole >= bar else "MISSES"
    print(
        f"{kind} against {label}: whole run {whole:.2f}x{knee} ({label} s: {times[0]}; "
        f"{kind} s: {times[1]}); {verdict} >= {bar}"
    )


if __name__ == "__main__":
    sys.exit(main())
