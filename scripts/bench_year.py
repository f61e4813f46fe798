"""A year on the box: what the database grows by, and what the daemon costs idle.

1. Bytes a year: the real Sampler, ticking as the server does (60 s idle, 5 s while an array
   syncs, downsampling every hour after MDBOOST_DOWNSAMPLE_AFTER_DAYS), over a /proc + /sys tree
   of a three-array box (md0, md1 raid1, md2 raid5) on a simulated clock: a whole year idle, and
   a year with one 3-day reshape and a monthly 10-hour scrub of md2. The file's size at the end,
   after the server's own checkpoint.
2. Space given back: 30 days of 5 s samples for 4 arrays as mdboost stored them before (an old
   file: no auto-vacuum), then `mdboost serve` over it: its first downsampling pass; the file's
   bytes and the bytes in use, before and after, measured from outside the server.
3. Idle cost: `mdboost serve` on an idle box ticking every 5 s: CPU and wake-ups (context
   switches of all its threads, /proc/PID/task/*/status) per tick, and RSS.
4. A week of a running reshape: `mdboost demo` on its simulated box from the start of its grow
   (md2 for 6.3 days, then md3: 7.6 days of reshaping), time running `--speedup` times faster,
   a tick every `--tick` simulated seconds, the page's polls asked once a real second; the
   server's RSS (VmRSS) every 12 simulated hours, and its growth from the end of day 1 to the
   end of day 7 (the bound: at most 100 MiB, under 5 % growth).

Prints figures; asserts nothing. `--smoke` runs every figure on tiny inputs (tests run it).

    .venv/bin/python scripts/bench_year.py [--smoke] [--days 365]
    .venv/bin/python scripts/bench_year.py --only week [--speedup 720] [--tick 72]
"""

import argparse
import contextlib
import os
import shlex
import sqlite3
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.kernel.host import Host
from app.live import sampler
from app.resources import SOURCE_ROOT, data_dir
from app.store import db

sys.path.insert(0, str(SOURCE_ROOT))
from scripts.bench_core import POLLS, build_history, machine, proc_status_kib, process_cpu_s
from tests.kernel_tree import KernelTree, mdstat_text, progress, raid1, raid5
from tests.server import Server, wait_for

DAY_S = 86400.0
YEAR_DAYS = 365.0
MB = 1_000_000
START = 1_767_225_600.0  # 2026-01-01 UTC
RESHAPE_TOTAL = 1_953_494_784  # KiB per member disk, as md counts a RAID5 grow
SCRUB_TOTAL = 1_953_494_784
RESHAPE_DAYS, SCRUB_HOURS = 3.0, 10.0


@dataclass(frozen=True)
class Operation:
    action: str
    start: float  # unix seconds
    seconds: float
    total: int  # KiB

    def done_at(self, now: float) -> int:
        return min(self.total, int(self.total * (now - self.start) / self.seconds))


def busy_year(days: float) -> list[Operation]:
    """A reshape in the year's second week, a scrub on the first of each month at 01:00."""
    operations = [Operation("reshape", START + 8 * DAY_S, RESHAPE_DAYS * DAY_S, RESHAPE_TOTAL)]
    for month in range(12):
        start = START + month * 30.4 * DAY_S + 3600
        if start < START + days * DAY_S:
            operations.append(Operation("check", start, SCRUB_HOURS * 3600, SCRUB_TOTAL))
    return operations


def three_arrays(tree: KernelTree, operation: Operation | None, now: float) -> None:
    sync = (
        progress(operation.action, operation.done_at(now), operation.total, speed=55_000)
        if operation
        else None
    )
    tree.mdstat(mdstat_text(raid5(progress=sync), raid1("md0"), raid1("md1")))
    tree.md("md2", sync_action=operation.action if operation else "idle", stripe_cache_size="256")


def year_of_samples(
    work: Path, days: float, operations: list[Operation]
) -> tuple[int, int, int, int]:
    """(file bytes with the WAL, bytes in use, rows, bytes of the empty schema) after `days` of
    the real Sampler's ticks."""
    tree = KernelTree(work / "tree")
    for array in ("md0", "md1", "md2"):
        tree.md(array)
    path = work / "year.db"
    conn = db.connect(path)
    db.migrate(conn, data_dir("migrations"))
    conn.execute("PRAGMA synchronous=OFF")  # simulated time: the disk's flushes are not the point
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    empty = db.space_in_use(conn)[0]
    now = START
    sampling = sampler.Sampler(Host(tree.proc, tree.sys), conn, clock=lambda: now)
    end = START + days * DAY_S
    shown: Operation | str | None = "nothing yet"
    while now < end:
        running = next((o for o in operations if o.start <= now < o.start + o.seconds), None)
        if running is not None or shown != running:
            three_arrays(tree, running, now)
            shown = running
        tick = sampling.sample_once()
        assert tick.error is None, tick.error
        now += 5.0 if tick.any_running else 60.0
    db.give_back_space(conn)
    rows = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    size, in_use = db.space_in_use(conn)
    conn.close()
    return size + _wal_bytes(path), in_use, rows, empty


def _wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def converted(path: Path) -> Callable[[], bool]:
    def look() -> bool:
        with contextlib.closing(sqlite3.connect(path)) as fresh:
            return bool(fresh.execute("PRAGMA auto_vacuum").fetchone()[0] == db.INCREMENTAL)

    return look


def space_given_back(work: Path, days: float) -> list[str]:
    """An old file with `days` of history, then the real server's first downsampling pass."""
    path = work / "data" / "mdboost.db"
    path.parent.mkdir()
    old = sqlite3.connect(path, isolation_level=None)  # as older mdboost versions made files
    old.execute("PRAGMA journal_mode=WAL")
    db.migrate(old, data_dir("migrations"))
    old.execute("PRAGMA synchronous=OFF")
    now = time.time()
    old.row_factory = sqlite3.Row
    rows, _ = build_history(old, now, days=days)
    old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before, in_use_before = db.space_in_use(old)
    old.close()
    tree = KernelTree(work / "served-tree")
    three_arrays(tree, None, now)
    env = {
        "MDBOOST_DB": str(path),
        "MDBOOST_PROC_ROOT": str(tree.proc),
        "MDBOOST_SYS_ROOT": str(tree.sys),
        "MDBOOST_SAMPLE_SECONDS": "5",
    }
    started = time.monotonic()
    with Server(["serve"], env=env, log=work / "served.log"):
        ready_s = time.monotonic() - started
        # A new connection for each look: PRAGMA auto_vacuum answers from what its connection
        # last read of the file's header, so one reader opened before the conversion kept
        # answering 0 after it (why the conversion seemed never to happen outside start-up).
        wait_for(converted(path), 600, "the server's first downsampling pass")
        # The conversion is visible once VACUUM commits; its checkpoint follows.
        wait_for(
            lambda: _wal_bytes(path) <= db.WAL_LIMIT_BYTES, 120, "the WAL checkpointed after it"
        )
        reader = sqlite3.connect(path)
        after, in_use = db.space_in_use(reader)
        after += _wal_bytes(path)
        reader.close()
    return [
        f"old file, {days:g} days of 5 s samples for 4 arrays ({rows:,} rows): "
        f"{before / MB:.1f} MB file, {in_use_before / MB:.1f} MB in use",
        f"after `mdboost serve`'s first pass (ready in {ready_s:.1f} s): {after / MB:.1f} MB "
        f"(file + WAL), {in_use / MB:.1f} MB in use: {after / in_use:.2f}x (target ≤ 1.25x)",
    ]


def idle_cost(work: Path, seconds: float) -> list[str]:
    """CPU, wake-ups and RSS of `mdboost serve` on an idle three-array box, 5 s ticks."""
    tree = KernelTree(work / "idle-tree")
    for array in ("md0", "md1", "md2"):
        tree.md(array)
    three_arrays(tree, None, time.time())
    env = {
        "MDBOOST_DB": str(work / "idle" / "mdboost.db"),
        "MDBOOST_PROC_ROOT": str(tree.proc),
        "MDBOOST_SYS_ROOT": str(tree.sys),
        "MDBOOST_SAMPLE_SECONDS": "5",
    }
    with Server(["serve"], env=env, log=work / "idle.log") as server:
        assert server.process is not None
        pid = server.process.pid
        time.sleep(5)  # settle: start-up work is not the idle cost (measured, not synchronised)
        cpu, switches = process_cpu_s(pid), context_switches(pid)
        time.sleep(seconds)  # the measurement window itself
        cpu, switches = process_cpu_s(pid) - cpu, context_switches(pid) - switches
        rss = proc_status_kib(pid, "VmRSS") / 1024
        threads = len(os.listdir(f"/proc/{pid}/task"))
    ticks = seconds / 5
    return [
        f"idle `mdboost serve`, 5 s ticks, {seconds:g} s: CPU {cpu * 1000 / ticks:.2f} ms per tick "
        f"({cpu / seconds * 100:.3f} % of a core), {switches / ticks:.1f} context switches per "
        f"tick over {threads} threads, RSS {rss:.1f} MiB",
    ]


def week_of_reshape(
    work: Path, days: float, speedup: float, tick_s: float, command: list[str] | None = None
) -> list[str]:
    """RSS of `mdboost demo` over `days` simulated days of its reshape (see the docstring)."""
    from app.simulator.box import Simulator

    state = work / "week"
    Simulator(state / "tree", speedup=speedup, start_percent=0.0)  # the demo loads its state
    env = {"MDBOOST_SAMPLE_SECONDS": str(tick_s / speedup)}
    args = ["demo", "--speedup", str(speedup), "--state-dir", str(state)]
    readings: list[tuple[float, float]] = []  # (simulated day, VmRSS MiB)
    polls = unanswered = 0
    with Server(args, env=env, log=work / "week.log", command=command, cwd=work) as server:
        assert server.process is not None
        pid = server.process.pid
        started = time.monotonic()
        next_reading = 0.0
        while (day := (time.monotonic() - started) * speedup / DAY_S) <= days:
            for path in POLLS:
                try:
                    with urllib.request.urlopen(server.base + path, timeout=60) as answer:
                        answer.read()
                except OSError:
                    unanswered += 1  # a slow answer on a loaded host; counted, not fatal
            polls += len(POLLS)
            if day >= next_reading:
                readings.append((day, proc_status_kib(pid, "VmRSS") / 1024))
                print(f"  day {day:.1f}: RSS {readings[-1][1]:.1f} MiB", flush=True)
                next_reading += 0.5
            time.sleep(1.0)  # the owner's page asks about once a second, not synchronisation
        readings.append((day, proc_status_kib(pid, "VmRSS") / 1024))
        syncing = [a["name"] for a in server.get("/api/arrays")["arrays"] if a.get("sync")]
        hwm = proc_status_kib(pid, "VmHWM") / 1024
    after_day_1 = next(rss for day_at, rss in readings if day_at >= min(1.0, days / 2))
    last = readings[-1][1]
    growth = (last - after_day_1) / after_day_1 * 100
    return [
        "RSS by simulated day: "
        + ", ".join(f"{day_at:.1f} d {rss:.1f}" for day_at, rss in readings),
        f"a week of reshape ({days:g} simulated days at {speedup:g}x, a tick every {tick_s:g} "
        f"simulated s, {polls:,} GETs of the page's polls, {unanswered} unanswered): "
        f"RSS {last:.1f} MiB at the end "
        f"(VmHWM {hwm:.1f}; target ≤ 100 MiB), {growth:+.1f} % since day "
        f"{min(1.0, days / 2):g} (target < 5 %); still syncing at the end: {syncing or 'none'}",
    ]


def context_switches(pid: int) -> int:
    """Voluntary + involuntary switches of every thread: how often the process woke."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=YEAR_DAYS, help="simulated days of growth")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs: checks the bench runs")
    parser.add_argument("--only", choices=("growth", "space", "idle", "week"), help="one figure")
    parser.add_argument("--speedup", type=float, default=720.0, help="the week's time, x real")
    parser.add_argument("--tick", type=float, default=72.0, help="the week's simulated s a tick")
    parser.add_argument(
        "--server",
        help="the command the week's server runs (default: this Python's -m app), e.g. an "
        "installed wheel's venv/bin/mdboost",
    )
    args = parser.parse_args()
    days = 0.1 if args.smoke else args.days
    history_days = 1.0 if args.smoke else 30.0
    idle_seconds = 10.0 if args.smoke else 120.0
    print(machine())
    with tempfile.TemporaryDirectory(prefix="mdboost-year-") as tmp:
        work = Path(tmp)
        if args.only in (None, "growth"):
            for name, operations, target_mb in (
                ("idle 3-array box", [], 20),
                ("3-day reshape + monthly 10 h scrubs", busy_year(days), 60),
            ):
                run = work / name.split()[0]
                run.mkdir()
                started = time.process_time()
                size, in_use, rows, empty = year_of_samples(run, days, operations)
                cpu_s = time.process_time() - started
                # Shorter than a year: the growth scaled to one, on top of the empty schema.
                per_year = empty + (size - empty) * YEAR_DAYS / days
                print(
                    f"{name}: {per_year / MB:.2f} MB a year (target ≤ {target_mb} MB): "
                    f"{size / MB:.2f} MB file + WAL after {days:g} simulated days "
                    f"({in_use / MB:.2f} MB in use, {rows:,} samples; {cpu_s:.0f} s CPU)"
                )
        if args.only in (None, "space"):
            for line in space_given_back(work, history_days):
                print(line)
        if args.only in (None, "idle"):
            for line in idle_cost(work, idle_seconds):
                print(line)
        if args.only in (None, "week"):
            week_days = 0.02 if args.smoke else 7.0
            command = shlex.split(args.server) if args.server else None
            for line in week_of_reshape(work, week_days, args.speedup, args.tick, command):
                print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
