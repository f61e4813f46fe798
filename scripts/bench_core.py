"""Benchmark of the core: parse time, sampler CPU per tick, and the real server's memory
and samples-endpoint latency over 30 days of 5 s samples for 4 arrays; and the server CPU of one
Prometheus scrape of GET /metrics (`--only metrics` runs just that). The tick includes the
"why is it slow" diagnosis (`--only tick` runs just the sampler's figures). The page's polls over
a run 3 and 10 days old (`--only polls`).

Prints each figure next to its target and how it was measured; asserts nothing (benchmarks print
figures; tests assert behaviour). Run from the repository root:

    .venv/bin/python scripts/bench_core.py
    .venv/bin/python scripts/bench_core.py --smoke   # every figure on tiny inputs (tests run it)
    .venv/bin/python scripts/bench_core.py --only polls --server /venv/bin/mdboost  # a wheel
"""

import argparse
import itertools
import math
import os
import platform
import random
import shlex
import sqlite3
import statistics
import sys
import tempfile
import time
import timeit
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.config import Settings
from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live import process_io, sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.md import mdstat
from app.resources import SOURCE_ROOT, data_dir
from app.simulator import box, layout
from app.store import db, journal, rollup
from app.tuning.tuner import Tuner

# tests.server: the same child-process server the end-to-end tests use.
sys.path.insert(0, str(SOURCE_ROOT))
from tests.server import Server, wait_for

DAY_S = 86400.0
TICK_S = 5.0
HISTORY_DAYS = 30.0
ARRAYS = ("md0", "md1", "md2", "md3")
MIB = 1024 * 1024


@dataclass(frozen=True)
class Scale:
    """How much each figure measures; --smoke shrinks all of them so a test can run every one."""

    ticks: int = 500  # sampler ticks timed
    history_days: float = HISTORY_DAYS  # of 5 s samples behind the server
    rounds: int = 200  # GETs per samples window (the polls: a quarter, at least 10)
    scrapes: int = 1000  # GET /metrics timed


SMOKE = Scale(ticks=20, history_days=1.0, rounds=2, scrapes=5)


@dataclass(frozen=True)
class Figure:
    name: str
    measured: float
    target: float
    unit: str
    how: str

    @property
    def verdict(self) -> str:
        return "ok" if self.measured <= self.target else "MISSED"


# ---- 1. parse time


def eight_array_mdstat() -> str:
    """Eight arrays of mixed levels, two syncing, three with a bitmap, in the kernel's layout."""

    def members(prefix: str, part: int, count: int) -> tuple[mdstat.Device, ...]:
        return tuple(mdstat.Device(f"{prefix}{chr(97 + i)}{part}", i, "") for i in range(count))

    def array(
        name: str,
        level: str,
        devices: tuple[mdstat.Device, ...],
        blocks: int,
        chunk_kb: int | None = None,
        status: str | None = None,
        bitmap: mdstat.Bitmap | None = None,
        sync: mdstat.Sync | None = None,
    ) -> mdstat.Array:
        n = len(devices)
        status = status or "U" * n
        return mdstat.Array(
            name, "active", False, False, level, "1.2", blocks, chunk_kb, devices,
            n, status.count("U"), status, bitmap, sync,
        )  # fmt: skip

    bitmap = mdstat.Bitmap(1, 15, 4, "65536KB")
    arrays = (
        array("md0", "raid1", members("sd", 1, 4), 2_490_176),
        array("md1", "raid1", members("sd", 2, 4), 2_097_088),
        array(
            "md2",
            "raid5",
            members("sd", 5, 4),
            5_860_484_352,
            64,
            "UUU_",
            bitmap,
            mdstat.Sync("recovery", 25.1, 491_263_360, 1_953_494_784, 5198.4, 4687),
        ),
        array(
            "md3",
            "raid6",
            members("sd", 6, 6),
            7_813_979_136,
            512,
            bitmap=bitmap,
            sync=mdstat.Sync("check", 71.3, 1_392_810_496, 1_953_494_784, 93.5, 100_012),
        ),
        array("md4", "raid10", members("nvme0n", 1, 4), 1_000_204_288, 512, bitmap=bitmap),
        array("md5", "raid0", members("sd", 7, 2), 3_906_766_848, 64),
        array("md6", "linear", members("sd", 8, 2), 1_953_382_400, 64),
        array("md7", "raid4", members("sd", 9, 3), 1_953_260_544, 128),
    )
    personalities = ("linear", "raid0", "raid1", "raid10", "raid6", "raid5", "raid4")
    return mdstat.render(mdstat.MdStat(personalities, arrays))


def bench_parse() -> Figure:
    text = eight_array_mdstat()
    parsed = mdstat_parse.parse(text)
    assert len(parsed.arrays) == 8 and not parsed.warnings, parsed.warnings
    number, repeat = 2000, 15
    per_parse_ms = [
        t / number * 1000
        for t in timeit.repeat(lambda: mdstat_parse.parse(text), number=number, repeat=repeat)
    ]
    return Figure(
        "parse, 8-array mdstat",
        statistics.median(per_parse_ms),
        0.2,
        "ms",
        f"median of {repeat} x timeit({number}) of mdstat_parse.parse() on {len(text)} bytes "
        "(raid0/1/4/5/6/10/linear, 2 syncing, 3 bitmaps); "
        f"spread {min(per_parse_ms):.3f}-{max(per_parse_ms):.3f} ms",
    )


# ---- 2. sampler CPU per tick


def bench_sampler_tick(work: Path, ticks: int = 500) -> list[Figure]:
    """The whole tick, "why is it slow" included: its reads of /proc/diskstats,
    meminfo and md's threads every tick, and every /proc/PID/io while a reader's burst holds the
    sync back. The Simulator's bursts (synoindexd on sda) come and go during the run."""
    sim = box.Simulator(work / "tick-tree")
    sim.state.next_burst = sim.state.sim_time + 600  # a burst starts 10 minutes in
    conn = db.connect(work / "tick.db")
    db.migrate(conn, data_dir("migrations"))
    host = Host(sim.root / "proc", sim.root / "sys")
    sampling = sampler.Sampler(host, conn, clock=lambda: sim.state.sim_time)
    diagnosis_ms: list[float] = []
    diagnose = sampling.diagnosis.tick

    def timed_diagnosis(*args: Any) -> Any:
        start = time.process_time()
        try:
            return diagnose(*args)
        finally:
            diagnosis_ms.append((time.process_time() - start) * 1000)

    sampling.diagnosis.tick = timed_diagnosis  # type: ignore[method-assign]
    cpu_ms, burst_ms, verdicts = [], [], set()
    for _ in range(ticks):
        sim.advance(TICK_S)
        start = time.process_time()
        tick = sampling.sample_once()
        cpu_ms.append((time.process_time() - start) * 1000)
        assert tick.error is None and tick.written == 4, tick
        assert "md2" in tick.diagnoses, "the reshape must be diagnosed every tick"
        verdicts |= {v.verdict for v in tick.diagnoses["md2"].verdicts}
        if sim.competing_io:
            burst_ms.append(cpu_ms[-1])
    conn.close()
    how = (
        f"time.process_time() around each of {ticks} Sampler.sample_once() on a Simulator tree "
        "(4 arrays, md2 reshaping, advanced 5 s between ticks) into a WAL SQLite file "
        f"(synchronous=FULL); max {max(cpu_ms):.2f} ms; verdicts seen: {sorted(verdicts)}"
    )
    return [
        Figure("sampler CPU per tick, mean", statistics.fmean(cpu_ms), 2.0, "ms", how),
        Figure("sampler CPU per tick, p95", percentile(cpu_ms, 95), 2.0, "ms", "same ticks"),
        Figure(
            "  of which the diagnosis, mean",
            statistics.fmean(diagnosis_ms),
            2.0,
            "ms",
            "app/live Tracker.tick inside the same ticks",
        ),
        Figure(
            "sampler CPU per tick in a burst, mean",
            statistics.fmean(burst_ms) if burst_ms else math.nan,
            2.0,
            "ms",
            f"the {len(burst_ms)} ticks while synoindexd read (the simulated /proc has few "
            "processes: the next figure reads a real one)",
        ),
        io_scan_figure(),
    ]


def bench_session_tick(work: Path, ticks: int = 500) -> list[Figure]:
    """The whole tick as the server runs it (sample, present, tuner) while the boost session is
    open against while none is: drift, effects and the never-slower comparison are the open
    session's own work. Blocks of ticks with and without boost alternate (A B B A ...)."""
    sim = box.Simulator(work / "session-tree")
    sim.state.next_burst = sim.state.sim_time + 10 * DAY_S  # no burst: the same work either way
    settings = Settings(
        proc_root=sim.root / "proc", sys_root=sim.root / "sys", db=work / "session.db"
    )
    conn = db.connect(settings.db)
    db.migrate(conn, data_dir("migrations"))
    host = Host(settings.proc_root, settings.sys_root)
    clock = lambda: sim.state.sim_time  # noqa: E731
    sampling = sampler.Sampler(host, conn, clock)
    tuner = Tuner.open(host, clock, settings)
    present = SnapshotBuilder(host, conn, tuner.lock)
    tuner.attach(present)
    block = max(ticks // 8, 5)
    cpu_ms: dict[bool, list[float]] = {False: [], True: []}
    for boosted in itertools.islice(itertools.cycle((False, True, True, False)), 8):
        session_open = journal.open_session(tuner.conn) is not None
        if boosted and not session_open:
            tuner.apply("boost")
        elif not boosted and session_open:
            tuner.revert()
        for _ in range(block):
            sim.advance(TICK_S)
            start = time.process_time()
            tick = sampling.sample_once()
            present.update(tick)
            tuner.on_tick(tick, present.snapshot)
            cpu_ms[boosted].append((time.process_time() - start) * 1000)
    conn.close()
    tuner.conn.close()
    idle, session = statistics.fmean(cpu_ms[False]), statistics.fmean(cpu_ms[True])
    how = (
        f"time.process_time() around Sampler.sample_once(), SnapshotBuilder.update() and "
        f"Tuner.on_tick() on a Simulator tree (md2 reshaping, 5 s between ticks), {block}-tick "
        f"blocks A B B A x2: {idle:.2f} ms a tick with no session, {session:.2f} ms with boost "
        "open"
    )
    return [Figure("tick CPU with boost open minus none, mean", session - idle, 1.0, "ms", how)]


def io_scan_figure(rounds: int = 20) -> Figure:
    """Naming who competes reads every /proc/PID/io: timed on this machine's own /proc."""
    host = Host(Path("/proc"), Path("/sys"))
    cpu_ms = []
    for _ in range(rounds):
        start = time.process_time()
        readable = [pid for pid in host.pids() if host.read_pid_io(pid) is not None]
        cpu_ms.append((time.process_time() - start) * 1000)
    scan_ms = statistics.median(cpu_ms)
    return Figure(
        "  naming who competes, per tick",
        scan_ms / (process_io.IO_SCAN_S / TICK_S),
        2.0,
        "ms",
        f"one read of every /proc/PID/io of THIS machine ({len(readable)} readable): "
        f"{scan_ms:.2f} ms (median of {rounds}), once per {process_io.IO_SCAN_S:g} s and only "
        "while other I/O competes",
    )


# ---- 3. thirty days of history, the real server over it


@dataclass(frozen=True)
class HistoryRun:
    """One synthetic run: it starts `start_days_ago` and progresses at `speed_kb_s`."""

    array: str
    action: str
    start_days_ago: float
    total_blocks: int
    speed_kb_s: int
    outcome: str  # completed: ends when done; interrupted: ends after `interrupted_after_s`
    interrupted_after_s: float = 0.0

    def end(self, now: float) -> float:
        start = now - self.start_days_ago * DAY_S
        if self.outcome == "running":
            return math.inf
        if self.outcome == "interrupted":
            return start + self.interrupted_after_s
        return start + self.total_blocks / self.speed_kb_s


def history_runs(reshape_days: float = 3.0, reshape_kb_s: int = 6_000) -> list[HistoryRun]:
    """A month on a Synology-like box; md2's current reshape matches the Simulator tree."""
    return [
        HistoryRun("md3", "recovery", 27.0, 976_758_848, 90_000, "completed"),
        HistoryRun("md0", "check", 21.0, 2_490_176, 40_000, "completed"),
        HistoryRun("md1", "check", 20.99, 2_097_088, 40_000, "completed"),
        # 2 TB at ~2.5 MB/s: nine days, finished ten days ago.
        HistoryRun("md2", "reshape", 19.0, layout.PER_DEVICE_BLOCKS, 2_500, "completed"),
        HistoryRun("md3", "check", 14.0, 976_758_848, 120_000, "completed"),
        HistoryRun("md2", "check", 8.0, 5_860_484_352, 100_000, "interrupted", 5 * 3600),
        HistoryRun(
            "md2", "reshape", reshape_days, layout.RESHAPE_TOTAL_BLOCKS, reshape_kb_s, "running"
        ),
    ]


_INSERT_SAMPLE = (
    "INSERT INTO samples (ts, array, run_id, state, status, degraded, action, percent, "
    "done_blocks, total_blocks, speed_kb_s, finish_min, sync_speed_kb_s, mismatch_cnt, "
    "stripe_cache_size, speed_min_kb_s, speed_max_kb_s) "
    "VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 1000, 200000)"
)


def build_history(
    conn: sqlite3.Connection,
    now: float,
    runs: list[HistoryRun] | None = None,
    days: float = HISTORY_DAYS,
) -> tuple[int, float]:
    """Insert `days` (30) of 5 s ticks for 4 arrays, as the sampler would have written them.

    Returns (rows, done_blocks of md2's running reshape at `now`).
    """
    runs = runs or history_runs()
    spans: dict[str, list[tuple[float, float, int, HistoryRun]]] = {a: [] for a in ARRAYS}
    with db.write_transaction(conn):
        for run_id, run in enumerate(runs, start=1):
            start, end = now - run.start_days_ago * DAY_S, run.end(now)
            conn.execute(
                "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, run.array, run.action, start, None if math.isinf(end) else end,
                 run.outcome, run.total_blocks),
            )  # fmt: skip
            spans[run.array].append((start, end, run_id, run))
    rng = random.Random(2)
    noise = [rng.lognormvariate(0, 0.08) for _ in range(997)]
    stripe_cache = {"md2": 256}
    first = now - days * DAY_S
    ticks = int(days * DAY_S / TICK_S)
    batch: list[tuple[object, ...]] = []
    rows = 0
    for i in range(ticks):
        ts = first + i * TICK_S
        # Competing I/O for 10 minutes of every hour: md holds the sync at a third of its speed.
        slow = 1 / 3 if i % 720 < 120 else 1.0
        for array in ARRAYS:
            span = next((s for s in spans[array] if s[0] <= ts < s[1]), None)
            if span is None:
                batch.append((ts, array, None, "UUUU", 0, None, None, None, None, None, None,
                              None, stripe_cache.get(array)))  # fmt: skip
                continue
            start, _, run_id, run = span
            done = min(run.total_blocks, int(run.speed_kb_s * (ts - start)))
            speed = int(run.speed_kb_s * noise[i % 997] * slow)
            degraded = 1 if run.action == "recovery" else 0
            batch.append((
                ts, array, run_id, "U_" if degraded else "UUUU", degraded, run.action,
                math.floor(done * 1000 / run.total_blocks) / 10, done, run.total_blocks, speed,
                round((run.total_blocks - done) / max(speed, 1) / 60, 1), speed,
                stripe_cache.get(array),
            ))  # fmt: skip
        if len(batch) >= 200_000 or i == ticks - 1:
            with db.write_transaction(conn):
                conn.executemany(_INSERT_SAMPLE, batch)
            rows += len(batch)
            batch.clear()
    current = runs[-1]
    return rows, current.speed_kb_s * (now - (now - current.start_days_ago * DAY_S))


def database_size(conn: sqlite3.Connection) -> tuple[int, int]:
    """(file bytes, bytes in use) after a checkpoint; deleted rows leave free pages in the file."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.space_in_use(conn)


def proc_status_kib(pid: int, field: str) -> int:
    # The server's own accounting (proc(5) /proc/PID/status); a benchmark, not app code.
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        body = response.read()
    elapsed_ms = (time.perf_counter() - start) * 1000
    assert response.status == 200 and body.startswith(b'{"array"'), body[:200]
    return elapsed_ms


def bench_server(work: Path, rounds: int, days: float) -> tuple[list[Figure], list[str]]:
    notes: list[str] = []
    db_path = work / "history.db"
    conn = db.connect(db_path)
    db.migrate(conn, data_dir("migrations"))
    conn.execute("PRAGMA synchronous=OFF")  # building the fixture only; the server uses FULL
    now = time.time()
    started = time.perf_counter()
    rows, current_done = build_history(conn, now, days=days)
    notes.append(f"built {rows:,} sample rows in {time.perf_counter() - started:.1f} s")
    size_before, _ = database_size(conn)
    started = time.perf_counter()
    deleted = rollup.downsample(conn, now - 7 * DAY_S)
    downsample_s = time.perf_counter() - started
    size_after, in_use_after = database_size(conn)
    kept = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    notes.append(
        f"downsample(7 days): {deleted:,} rows deleted, {kept:,} kept, in {downsample_s:.1f} s; "
        f"DB {size_before / MIB:.0f} MiB before, {size_after / MIB:.0f} MiB file after "
        f"({in_use_after / MIB:.0f} MiB in use; the rest, free pages, goes back to the filesystem)"
    )
    run_start = conn.execute(
        "SELECT started FROM runs WHERE array = 'md2' AND finished IS NULL"
    ).fetchone()[0]
    md2_rows = conn.execute("SELECT COUNT(*) FROM samples WHERE array = 'md2'").fetchone()[0]
    conn.close()

    tree = box.Simulator(
        work / "tree", start_percent=current_done * 100 / layout.RESHAPE_TOTAL_BLOCKS
    )
    env = {
        "MDBOOST_DB": str(db_path),
        "MDBOOST_PROC_ROOT": str(tree.root / "proc"),
        "MDBOOST_SYS_ROOT": str(tree.root / "sys"),
        "MDBOOST_SAMPLE_SECONDS": "5",
    }
    windows = {  # name: (query string, how it is shown)
        "full range": ("", ""),
        "last 24 h": (f"?since={now - DAY_S:.0f}", "?since=now-24h"),
        "since run start": (f"?since={run_start:.0f}", "?since=<run start>"),
    }
    latencies: dict[str, list[float]] = {name: [] for name in windows}
    with Server(["serve"], env=env, log=work / "server.log") as server:
        assert server.process is not None
        pid = server.process.pid

        def sampler_wrote() -> bool:
            with sqlite3.connect(db_path) as reader:
                return bool(reader.execute("SELECT MAX(ts) FROM samples").fetchone()[0] > now)

        wait_for(sampler_wrote, timeout=120, what="the server's first sampler tick")
        rss_idle = proc_status_kib(pid, "VmRSS")
        url = f"{server.base}/api/arrays/md2/samples"
        for query, _ in windows.values():
            for _ in range(5):
                timed_get(url + query)
        for _ in range(rounds):
            for name, (query, _) in windows.items():
                latencies[name].append(timed_get(url + query))
        rss, hwm = proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM")
    with sqlite3.connect(db_path) as reader:
        open_runs = reader.execute("SELECT started FROM runs WHERE finished IS NULL").fetchall()
    assert open_runs == [(run_start,)], f"the server did not continue md2's reshape: {open_runs}"
    all_ms = [ms for values in latencies.values() for ms in values]
    requests = len(all_ms)
    figures = [
        Figure(
            "server RSS after the load",
            rss / 1024,
            100,
            "MB",
            f"VmRSS of `python -m app serve` after {requests} requests "
            f"(VmHWM {hwm / 1024:.1f} MiB, {rss_idle / 1024:.1f} MiB before them), in MiB",
        ),
        Figure(
            "samples endpoint p95 (all)",
            percentile(all_ms, 95),
            50,
            "ms",
            f"{requests} sequential GETs, new connection each, sampler ticking every 5 s; "
            f"md2 has {md2_rows:,} rows after downsampling",
        ),
    ]
    for name, values in latencies.items():
        figures.append(
            Figure(
                f"  {name}",
                percentile(values, 95),
                50,
                "ms",
                f"p50 {statistics.median(values):.1f} ms; p95 over {len(values)} GETs of "
                f"/api/arrays/md2/samples{windows[name][1]}",
            )
        )
    return figures, notes


# ---- 4. the page's polls over a run 3 and 10 days old

POLLS = (
    "/",
    "/ui/arrays/md2",
    "/ui/boost",
    "/api/arrays/md2/forecast",
    "/api/pool/forecast",
    "/api/runs",
)


def bench_polls(
    work: Path,
    rounds: int,
    days: float,
    ages: tuple[float, ...] = (3.0, 10.0),
    command: list[str] | None = None,
) -> list[Figure]:
    """p95 and server CPU per poll of the page's polls, md2's reshape `age` days in, over 30 days
    of history downsampled as the sampler does; the real server, sampler ticking every 5 s."""
    figures = []
    for age in ages:
        db_path = work / f"polls-{age:g}.db"
        conn = db.connect(db_path)
        db.migrate(conn, data_dir("migrations"))
        conn.execute("PRAGMA synchronous=OFF")  # building the fixture only
        now = time.time()
        # Half-way through md2's reshape after `age` days, whatever the age.
        speed = int(layout.RESHAPE_TOTAL_BLOCKS * 0.5 / (age * DAY_S))
        _, current_done = build_history(conn, now, history_runs(age, speed), days)
        rollup.downsample(conn, now - 7 * DAY_S)
        run_rows = conn.execute(
            "SELECT COUNT(*) FROM samples "
            "WHERE run_id = (SELECT id FROM runs WHERE finished IS NULL)"
        ).fetchone()[0]
        conn.close()
        tree = box.Simulator(
            work / f"polls-tree-{age:g}",
            start_percent=current_done * 100 / layout.RESHAPE_TOTAL_BLOCKS,
        )
        env = {
            "MDBOOST_DB": str(db_path),
            "MDBOOST_PROC_ROOT": str(tree.root / "proc"),
            "MDBOOST_SYS_ROOT": str(tree.root / "sys"),
            "MDBOOST_SAMPLE_SECONDS": "5",
        }
        latencies: list[float] = []
        log = work / f"polls-{age:g}.log"
        with Server(["serve"], env=env, log=log, command=command, cwd=work) as server:
            assert server.process is not None
            pid = server.process.pid

            def get(path: str) -> float:
                start = time.perf_counter()
                with urllib.request.urlopen(server.base + path, timeout=30) as response:
                    response.read()
                return (time.perf_counter() - start) * 1000

            for path in POLLS:
                get(path)
            before = process_cpu_s(pid)
            for _ in range(rounds):
                latencies.extend(get(path) for path in POLLS)
            cpu_ms = (process_cpu_s(pid) - before) / len(latencies) * 1000
            rss = proc_status_kib(pid, "VmRSS")
        how = (
            f"{len(latencies)} sequential GETs of {', '.join(POLLS)}; md2's reshape {age:g} days "
            f"in ({run_rows:,} samples of it after downsampling), sampler ticking every 5 s"
        )
        figures += [
            Figure(f"polls p95, run {age:g} days old", percentile(latencies, 95), 50, "ms", how),
            Figure(
                f"  server CPU per poll, {age:g} days",
                cpu_ms,
                10,
                "ms",
                "utime+stime of the server (/proc/PID/stat) over those GETs, its ticks included",
            ),
            Figure(f"  server RSS after them, {age:g} days", rss / 1024, 100, "MB", "VmRSS, MiB"),
        ]
    return figures


# ---- 5. a Prometheus scrape of GET /metrics


def bench_metrics(work: Path, scrapes: int = 1000) -> tuple[Figure, Figure]:
    """Server CPU per scrape: `python -m app serve` over the Simulator's tree after 300 sampler
    ticks of its reshape with the boost preset applied; utime + stime of the server process
    (proc(5) /proc/PID/stat) around `scrapes` sequential GET /metrics."""
    from app.config import Settings
    from app.live.snapshot_builder import SnapshotBuilder
    from app.metrics.exposition import render
    from app.tuning.tuner import Tuner

    sim = box.Simulator(work / "metrics-tree")
    settings = Settings(
        proc_root=sim.root / "proc", sys_root=sim.root / "sys", db=work / "metrics.db"
    )
    conn = db.connect(settings.db)
    db.migrate(conn, data_dir("migrations"))
    host = Host(settings.proc_root, settings.sys_root)
    sampling = sampler.Sampler(host, conn, clock=lambda: sim.state.sim_time)
    tuner = Tuner.open(host, lambda: sim.state.sim_time, settings)
    snapshot_builder = SnapshotBuilder(host, conn)
    for tick in range(300):
        sim.advance(TICK_S)
        if tick == 100:
            tuner.apply("boost")
        snapshot_builder.update(sampling.sample_once())
    render_ms = [
        t / 200 * 1000
        for t in timeit.repeat(
            lambda: render(snapshot_builder.snapshot), timer=time.process_time, number=200
        )
    ]
    conn.close()
    tuner.conn.close()
    env = {
        "MDBOOST_DB": str(settings.db),
        "MDBOOST_PROC_ROOT": str(settings.proc_root),
        "MDBOOST_SYS_ROOT": str(settings.sys_root),
        "MDBOOST_SAMPLE_SECONDS": "3600",  # one tick at start-up, none while timing
        "MDBOOST_REVERT_ON_FINISH": "false",
    }
    with Server(["serve"], env=env, log=work / "metrics-server.log") as server:
        assert server.process is not None
        url = f"{server.base}/metrics"

        def scrape() -> str:
            with urllib.request.urlopen(url, timeout=10) as response:
                return str(response.read().decode())

        body = wait_for(
            lambda: (text := scrape()) and 'bound="mid",device="md2"' in text and text,
            60,
            "the server's first tick with md2's forecast",
        )
        assert 'mdboost_tuning_preset_info{preset="boost"}' in body, body
        series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
        before = process_cpu_s(server.process.pid)
        for _ in range(scrapes):
            scrape()
        cpu_ms = (process_cpu_s(server.process.pid) - before) / scrapes * 1000
    how = (
        f"utime+stime of `python -m app serve` (/proc/PID/stat) over {scrapes} sequential "
        f"GET /metrics, new connection each; {series} series, {len(body)} bytes; 4 arrays, md2 "
        "reshaping with a forecast, boost applied, sampler idle while timing"
    )
    return (
        Figure("/metrics server CPU per scrape", cpu_ms, 5.0, "ms", how),
        Figure(
            "  render() alone",
            statistics.median(render_ms),
            5.0,
            "ms",
            "median of 5 x 200 render(snapshot) in process time: the exposition, no HTTP",
        ),
    )


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (proc(5) /proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], pct: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]  # fmt: skip
        cpu = names[0] if names else cpu
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.node()} {platform.system()} {platform.release()}, {cpu}, "
        f"{os.cpu_count()} CPUs, load {load}; Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, help="requests per samples window (200)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny inputs: checks the bench runs, figures mean little",
    )
    parser.add_argument(
        "--only",
        choices=("metrics", "tick", "polls"),
        help="run one figure: metrics = a /metrics scrape's CPU, tick = the sampler's CPU per "
        "tick, polls = the page's polls over a run 3 and 10 days old",
    )
    parser.add_argument(
        "--server",
        help="the command the polls' server runs (default: this Python's -m app), e.g. an "
        "installed wheel's venv/bin/mdboost",
    )
    args = parser.parse_args()
    scale = SMOKE if args.smoke else Scale()
    if args.rounds is not None:
        scale = replace(scale, rounds=args.rounds)
    print(machine())
    figures: list[Figure] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mdboost-bench-") as tmp:
        work = Path(tmp)
        if args.only is None:
            figures.append(bench_parse())
        if args.only in (None, "tick"):
            figures.extend(bench_sampler_tick(work, scale.ticks))
            figures.extend(bench_session_tick(work, scale.ticks))
        if args.only is None:
            server_figures, notes = bench_server(work, scale.rounds, scale.history_days)
            figures.extend(server_figures)
        if args.only in (None, "polls"):
            command = shlex.split(args.server) if args.server else None
            polls_rounds = max(scale.rounds // 4, 10)
            figures.extend(bench_polls(work, polls_rounds, scale.history_days, command=command))
        if args.only in (None, "metrics"):
            figures.extend(bench_metrics(work, scale.scrapes))
    width = max(len(f.name) for f in figures)
    print(f"\n{'figure':<{width}}  {'measured':>10}  {'target':>9}  verdict  how")
    for f in figures:
        print(
            f"{f.name:<{width}}  {f.measured:>7.3f} {f.unit:<2}  "
            f"≤ {f.target:g} {f.unit:<2}  {f.verdict:<7}  {f.how}"
        )
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
