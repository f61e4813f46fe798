"""Guest side of scripts/bench_autotune.py: a manual stripe-cache sweep, then auto-tune, on real
RAID5 3->4 reshapes with HDD-like throttled disks and DSM-like defaults.

Runs as root in the VM. Each trial builds a fresh 3-disk RAID5 (64 KiB chunks, --assume-clean),
sets DSM-like knobs and grows it to 4 disks. A "defaults" trial leaves the stripe cache as mdadm
left it when the grow started (DSM's 256, raised to 513 by mdadm itself); a "fixed" trial writes
one stripe_cache_size right after the grow starts (the manual sweep); an "autotune" trial presses
mdboost's auto-tune over HTTP instead, once the sampler has seen the reshape, and lets the sweep
pick; a "boost" trial presses mdboost's boost toggle right after the grow starts, as a user would.
One mdboost process (sampling every second unless SAMPLE_S says otherwise) is started before the
first grow and left to settle (its start-up under emulation takes ~50 s of CPU), the same in every
trial kind; SERVER=0 runs none (defaults and fixed caches only, the plain setup). Under
emulation md's raid5 thread is CPU-bound (84-98 % of a vCPU on 5.10), so each trial records where
the guest's CPU went: mdboost's process, md0's threads, this script's polling. The
auto-tune and boost trials record the knobs before the press and after mdboost's own revert
(which must match). Each trial records its whole time, its time to the grow's knee (2/3: from there it only writes), and each member's /proc/diskstats counts
over the run (requests, their mean size, time in flight: why one kernel reshapes slower than
another). Results go to $OUT/bench.json.
"""

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from api_scenarios import Server, api, api_action
from bench_reshape import GROW_TO, KNEE, Reader, dsm_array_with_a_new_disk
from mdguest import DISKS, OUT, main, md_path, read, record, running_action, say, sh, wait_for

ROUNDS = int(os.environ.get("ROUNDS", "1"))
# SERVER=0: no mdboost in the guest at all (the plain experiment: defaults and fixed caches
# only). Otherwise one mdboost process is started before the first grow and left to settle, the
# same in every trial kind (under emulation its start-up and ticks take the md thread's CPU,
# and a trial that starts the grow while mdboost is still starting pays for it).
SERVER = os.environ.get("SERVER", "1") == "1"
SAMPLE_S = os.environ.get("SAMPLE_S", "1")  # mdboost's tick in the guest (the box's: 5 s busy)
READER = os.environ.get("READER", "0") == "1"
# READER_DUTY="20/60": the reader reads 20 s of every 60 s (other I/O that comes and goes).


def duty_cycle() -> tuple[float, float] | None:
    """READER_DUTY as (on, period) seconds; None: the reader reads all the time."""
    text = os.environ.get("READER_DUTY", "")
    if not text:
        return None
    on, period = text.split("/")
    return float(on), float(period)


DUTY = duty_cycle()
# Seconds into the grow before boost is pressed: 0 right after it starts; later, mdboost knows
# the pace before the press and can compare (app/tuning/session/never_slower.py).
PRESS_AFTER_S = float(os.environ.get("PRESS_AFTER_S", "0"))
# "defaults", stripe cache values, and "autotune", in the order they run.
PLAN = os.environ.get("PLAN", "defaults 1024 4096 16384 32768 autotune").split()
# Auto-tune's step lengths, scaled to a reshape of minutes (a NAS's takes days: the defaults
# there are 30 s settle, 60-300 s measure); the sampler ticks every second.
AUTOTUNE_ENV = {
    "MDBOOST_AUTOTUNE_SETTLE_SECONDS": os.environ.get("SETTLE", "5"),
    "MDBOOST_AUTOTUNE_MEASURE_SECONDS": os.environ.get("MEASURE", "40"),
    "MDBOOST_AUTOTUNE_MAX_MEASURE_SECONDS": os.environ.get("MAX_MEASURE", "60"),
}


def done_share() -> float | None:
    """The reshape's progress as a share (sync_completed "done / total"), None when idle."""
    text = read(md_path("md0", "sync_completed"))
    if "/" not in text:
        return None
    done, total = (int(v) for v in text.split("/"))
    return done / total if total else None


MEMBER_NAMES = [Path(d).name for d in DISKS[:GROW_TO]]
# /proc/diskstats fields after the name: reads, merged, sectors, ms; writes, merged, sectors, ms;
# in flight, io ms, weighted ms (Documentation/admin-guide/iostats.rst).
DISKSTAT_FIELDS = ("reads", "read_sectors", "read_ms", "writes", "write_sectors", "write_ms")
DISKSTAT_COLUMNS = (0, 2, 3, 4, 6, 7)


def diskstats() -> dict[str, list[int]]:
    """Each member's counters (DISKSTAT_FIELDS) as /proc/diskstats shows them now."""
    found = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        words = line.split()
        if words[2] in MEMBER_NAMES:
            found[words[2]] = [int(words[3 + c]) for c in DISKSTAT_COLUMNS]
    return found


def diskstat_delta(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, Any]:
    """Per member over the run: requests, mean request size (KiB) and mean time per request
    (ms), reads and writes apart; and the I/O scheduler md's members had."""
    per_disk: dict[str, Any] = {}
    for disk in MEMBER_NAMES:
        moved = (a - b for a, b in zip(after[disk], before[disk], strict=True))
        d = dict(zip(DISKSTAT_FIELDS, moved, strict=True))
        per_disk[disk] = {
            "reads": d["reads"],
            "read_kib": round(d["read_sectors"] / 2 / d["reads"], 1) if d["reads"] else None,
            "read_ms": round(d["read_ms"] / d["reads"], 1) if d["reads"] else None,
            "writes": d["writes"],
            "write_kib": round(d["write_sectors"] / 2 / d["writes"], 1) if d["writes"] else None,
            "write_ms": round(d["write_ms"] / d["writes"], 1) if d["writes"] else None,
            "scheduler": read(f"/sys/block/{disk}/queue/scheduler"),
        }
    return per_disk


# What a boost or auto-tune may write, read before its press and after its revert.
KNOBS = (
    "/proc/sys/dev/raid/speed_limit_min",
    "/proc/sys/dev/raid/speed_limit_max",
    "/sys/block/md0/md/sync_speed_min",
    "/sys/block/md0/md/sync_speed_max",
    "/sys/block/md0/md/stripe_cache_size",
    "/sys/block/md0/md/group_thread_cnt",
    "/sys/block/md0/queue/read_ahead_kb",
    *(f"/sys/block/{d}/queue/read_ahead_kb" for d in MEMBER_NAMES),
)


def knobs() -> dict[str, str]:
    return {path: read(path) for path in KNOBS}


def cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process or kernel thread (proc(5) /proc/PID/stat fields 14
    and 15); None once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_ticks() -> tuple[int, int]:
    """The guest's (busy, all) CPU ticks over every vCPU (/proc/stat's cpu line; idle + iowait
    are not busy)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(values) - values[3] - values[4], sum(values)


def md_threads() -> dict[str, int]:
    """md0's kernel threads by name (md0_raid5, md0_reshape), with their pids."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            comm = stat.read_text().split("(", 1)[1].split(")", 1)[0]
        except (OSError, IndexError):
            continue
        if comm.startswith("md0_"):
            found[comm] = int(stat.parent.name)
    return found


class CpuWatch:
    """CPU seconds over a trial: mdboost's process, md0's threads (read every poll, as the
    reshape thread exits when the grow ends), this bench's own process, and the guest's busy
    share of its vCPUs: what bounds a grow under emulation."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.server_before = cpu_s(server_pid) if server_pid else None
        self.self_before = time.process_time()
        self.busy_before = busy_ticks()
        self.threads: dict[str, tuple[int, float, float]] = {}  # name: (pid, first, last)

    def poll(self) -> None:
        # a scan of every /proc/PID/stat costs the guest ~0.1 s under emulation: only until
        # both of md0's threads are known, then their two files
        known = {name: pid for name, (pid, _, _) in self.threads.items()}
        for name, pid in (known if len(known) >= 2 else md_threads()).items():
            now = cpu_s(pid)
            if now is None:
                continue
            first = self.threads[name][1] if name in self.threads else now
            self.threads[name] = (pid, first, now)

    def result(self, seconds: float) -> dict[str, Any]:
        busy, total = (a - b for a, b in zip(busy_ticks(), self.busy_before, strict=True))
        server_now = cpu_s(self.server_pid) if self.server_pid else None
        return {
            "guest_busy_share": round(busy / total, 3) if total else None,
            "bench_cpu_s": round(time.process_time() - self.self_before, 1),
            "mdboost_cpu_s": (
                round(server_now - self.server_before, 1)
                if server_now is not None and self.server_before is not None
                else None
            ),
            "md_threads_cpu_share": {
                name: round((last - first) / seconds, 3)
                for name, (_, first, last) in sorted(self.threads.items())
            },
        }


def trial(kind: str, number: int, server_pid: int | None) -> dict[str, Any]:
    dsm_array_with_a_new_disk()
    reader = Reader("/dev/md0", DUTY)
    if READER:
        reader.start()
    stats_before = diskstats()
    seen_slower = len(slower_rows()) if kind == "boost" else 0
    cpu = CpuWatch(server_pid)
    started = time.monotonic()
    cache, _, threads = kind.partition("+threads")
    if threads:  # "16384+threads2": md's raid5 worker threads, set while the array is idle
        md_path("md0", "group_thread_cnt").write_text(f"{threads}\n")
    sh("mdadm", "--grow", "/dev/md0", f"--raid-devices={GROW_TO}")
    at_grow = read(md_path("md0", "stripe_cache_size"))
    sweep: Any = None
    knobs_before: dict[str, str] | None = None
    if kind == "autotune":
        wait_for(lambda: api_action("md0") == "reshape", "the sampler to see the reshape", 60, 1)
        knobs_before = knobs()
        api("POST", "/api/autotune", {"array": "md0"})
    elif kind == "boost":
        wait_for(lambda: api_action("md0") == "reshape", "the sampler to see the reshape", 60, 1)
        knobs_before = knobs()
        while time.monotonic() - started < PRESS_AFTER_S and running_action("md0") != "idle":
            cpu.poll()
            time.sleep(0.5)  # a sampling interval, as in the loop below
        api("POST", "/api/boost", {"on": True})
    elif kind == "floor":  # boost's limits alone, the stripe cache left as mdadm left it
        md_path("md0", "sync_speed_max").write_text("2000000\n")
        md_path("md0", "sync_speed_min").write_text("600000\n")
    elif kind != "defaults":
        md_path("md0", "stripe_cache_size").write_text(f"{cache}\n")
    knee_s = sweep_s = sweep_share = None
    polls = 0
    while running_action("md0") != "idle":
        share = done_share()
        cpu.poll()
        if knee_s is None and share is not None and share >= KNEE:
            knee_s = time.monotonic() - started
        # mdboost's API every 5 s, not every poll: an HTTP answer costs the guest CPU that md's
        # thread needs under emulation
        polls += 1
        ask = kind == "autotune" and sweep is None and polls % 10 == 0
        if ask and (sweep := _sweep_over()) is not None:
            sweep_s, sweep_share = time.monotonic() - started, share
        time.sleep(0.5)  # a sampling interval: the loop's condition is md going idle
    seconds = time.monotonic() - started
    cpu_used = cpu.result(seconds)
    stats_after = diskstats()
    reader.stop.set()
    if READER:
        reader.join()
    per_device_kib = int(Path("/sys/block/md0/md/component_size").read_text())
    if kind == "autotune":
        sweep = sweep or _sweep_over()
    found_slower = put_back(slower_rows()[seen_slower:]) if kind == "boost" else None
    if knobs_before is not None:  # mdboost reverts by itself when the reshape ends
        wait_for(lambda: not api("GET", "/api/tuning")["active"], "the revert", 60, 0.5)
        after = knobs()
        reverted = {p: [v, after[p]] for p, v in knobs_before.items() if after[p] != v}
    result: dict[str, Any] = {
        "trial": number,
        "kind": "fixed" if kind.isdigit() else "threads" if threads else kind,
        "kernel": os.uname().release,
        "stripe_cache": int(cache) if cache.isdigit() else int(at_grow),
        "group_thread_cnt": read(md_path("md0", "group_thread_cnt")),
        "seconds": round(seconds, 1),
        "knee_s": round(knee_s, 1) if knee_s is not None else None,
        "per_device_mib": per_device_kib / 1024,
        "reshape_mb_s": round(per_device_kib * 1024 / seconds / 1e6, 2),
        "before_knee_mb_s": (
            round(per_device_kib * 1024 * KNEE / knee_s / 1e6, 2) if knee_s else None
        ),
        "reader_mb_s": round(reader.bytes / seconds / 1e6, 2) if READER else None,
        "reader_duty": list(DUTY) if READER and DUTY else None,
        "press_after_s": PRESS_AFTER_S if kind == "boost" else None,
        "put_back": found_slower,
        "stripe_cache_at_grow": at_grow,
        "diskstats": diskstat_delta(stats_before, stats_after),
        "mdboost": SERVER,
        "cpu": cpu_used,
    }
    if knobs_before is not None:
        result["not_reverted"] = reverted  # knob: [before the press, after the revert]
    if sweep is not None:
        result |= {
            "sweep": sweep,
            "sweep_s": round(sweep_s, 1) if sweep_s is not None else None,
            "sweep_done_share": round(sweep_share, 3) if sweep_share is not None else None,
        }
    say(json.dumps({k: v for k, v in result.items() if k != "sweep"}))
    return result


def slower_rows() -> list[tuple[Any, ...]]:
    """mdboost's findings of a preset that made a grow slower (its never-slower rule): paces
    before and after, noise, md's busiest thread then, from its database."""
    conn = sqlite3.connect("file:/tmp/mdboost/mdboost.db?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT before_kb_s, after_kb_s, noise_kb_s, md_thread, md_thread_cores"
            " FROM slower_presets ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def put_back(rows: list[tuple[Any, ...]]) -> dict[str, Any] | None:
    """The trial's finding, when mdboost put boost back during it; None when it kept boost."""
    if not rows:
        return None
    before, after, noise, thread, cores = rows[-1]
    return {
        "ratio": round(after / before, 2),
        "before_kb_s": round(before),
        "after_kb_s": round(after),
        "noise_kb_s": round(noise),
        "md_thread": thread,
        "md_thread_cores": cores,
    }


def _sweep_over() -> dict[str, Any] | None:
    sweep = api("GET", "/api/tuning")["autotune"]
    if sweep is None or sweep["state"] == "running":
        return None
    return dict(sweep)


def settle(pid: int, window_s: float = 5, idle_share: float = 0.10, timeout_s: float = 180) -> None:
    """Wait until mdboost's CPU over a window is under `idle_share` of a core: its start-up done
    (imports over 9p under emulation take ~50 s), its first ticks and its first idle-array
    diagnosis behind it; records the start-up's CPU and how long settling took."""
    started = time.monotonic()
    while True:
        before = cpu_s(pid) or 0.0
        time.sleep(window_s)  # a measuring window, not a synchronisation
        rate = ((cpu_s(pid) or 0.0) - before) / window_s
        if rate < idle_share or time.monotonic() - started > timeout_s:
            break
    record("mdboost_settle_s", round(time.monotonic() - started, 1))
    record("mdboost_idle_cpu_share", round(rate, 3))
    record("mdboost_startup_cpu_s", cpu_s(pid))
    say(f"mdboost settled after {time.monotonic() - started:.1f} s: {rate:.1%} of a core")


def scenario() -> None:
    if not SERVER and any(kind in ("autotune", "boost") for kind in PLAN):
        raise SystemExit("SERVER=0 runs defaults and fixed caches only: no mdboost to press")
    Path("/tmp/mdboost").mkdir(exist_ok=True)
    os.environ.update(AUTOTUNE_ENV)
    server = Server(sample_s=SAMPLE_S) if SERVER else None
    pid = None
    if server is not None:
        server.start()
        assert server.proc is not None
        pid = server.proc.pid
        settle(pid)
    results: list[dict[str, Any]] = []
    try:
        for round_number in range(ROUNDS):
            shift = round_number % len(PLAN)
            for kind in PLAN[shift:] + PLAN[:shift]:
                results.append(trial(kind, len(results) + 1, pid))
                (OUT / "bench.json").write_text(json.dumps(results, indent=1))
    finally:
        if server is not None:
            server.stop()
            # the per-second samples behind each step, for a look at the noise afterwards
            shutil.copy("/tmp/mdboost/mdboost.db", OUT / "mdboost.db")


if __name__ == "__main__":
    main(scenario)
