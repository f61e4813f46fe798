"""Guest scenario: "why is it slow?" on the real kernel, one array state at a time.

Runs as root. The VM's disks are throttled by qemu per disk (tests/realkernel/
test_diagnosis_on_real_kernel.py): vda-vdc HDD-like, vdd far slower, vde-vdg unthrottled. Each
scenario starts a `check` on a fresh array and runs mdboost's own sampler (2 s ticks, the real
one-minute hysteresis) against the real /proc and /sys, recording each tick's diagnosis:
  held_by_max    raid5 on vde-vdg with sync_speed_max 4000 (local)
  yielding       the same with a dd reading the array all along
  slow_member    raid5 on vde, vdf and the slow vdd
  disks_limit    raid5 on vda-vdc, all at their throttle (a check filled 4096 entries at times;
                 16384: the cache is not the limit)
  bursts         vda-vdc again, dd reading in 12 s bursts with 18 s pauses: nothing may flap
Results: $OUT/diagnosis.json; $OUT/fixtures/<scenario>/t0 and t1 are two captures 30 s apart
while the verdict held, for the unit tests (tests/fixtures/diagnosis).
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mdguest import (
    OUT,
    main,
    md_path,
    say,
    set_speed_limits,
    sh,
    snapshot,
    stop_all,
    wait_for,
    wipe,
)

REPO = Path(os.environ["REPO"])
sys.path.insert(0, str(REPO))

from app.kernel.host import Host  # noqa: E402
from app.live.sampler import Sampler  # noqa: E402
from app.store import db  # noqa: E402

MD = "md0"
TICK_S = 2.0
RUN_S = 70.0  # at least: the verdict's hold (60 s) and two captures 30 s apart after 35 s
MAX_RUN_S = 150.0
SCENARIOS: dict[str, dict[str, Any]] = {
    "held_by_max": {"disks": ("vde", "vdf", "vdg"), "attrs": {"sync_speed_max": "4000"}},
    "yielding": {"disks": ("vde", "vdf", "vdg"), "reader": "steady"},
    "slow_member": {"disks": ("vde", "vdf", "vdd")},
    "disks_limit": {"disks": ("vda", "vdb", "vdc"), "attrs": {"stripe_cache_size": "16384"}},
    "bursts": {"disks": ("vda", "vdb", "vdc"), "reader": "bursts", "run_s": 120.0},
}


def start_check(disks: tuple[str, ...], attrs: dict[str, str]) -> None:
    devices = [f"/dev/{d}" for d in disks]
    wipe(devices)
    sh(
        "mdadm", "--create", f"/dev/{MD}", "--run", "--level=5", f"--raid-devices={len(disks)}",
        "--chunk=64", "--assume-clean", "--metadata=1.2", *devices,
    )  # fmt: skip
    for attr, value in attrs.items():
        md_path(MD, attr).write_text(value + "\n")
    md_path(MD, "sync_action").write_text("check\n")
    wait_for(lambda: md_path(MD, "sync_action").read_text().strip() == "check", "check to run", 30)


def reader(kind: str) -> subprocess.Popen[bytes]:
    """dd reading the array with direct I/O, from its middle so it never meets the check; in
    bursts: 12 s of reading, 18 s of pause."""
    read = f"dd if=/dev/{MD} of=/dev/null bs=1M iflag=direct skip=300 count=200000 2>/dev/null"
    loop = f"while :; do {read}; done"
    if kind == "bursts":
        loop = f"while :; do timeout 12 {read}; sleep 18; done"
    return subprocess.Popen(["sh", "-c", loop], start_new_session=True)


def capture(name: str, moment: str) -> None:
    """A fixture tree for the unit tests: md's files (mdguest.snapshot) plus what the
    diagnosis reads: diskstats, meminfo, md's threads and any dd's /proc/PID/{comm,io}."""
    root = snapshot(f"{name}/{moment}", [MD])
    shutil.rmtree(root / "mdadm-detail", ignore_errors=True)
    (root / "captured_at").write_text(f"{time.time():.3f}\n")  # the unit tests' clock
    for name_ in ("diskstats", "meminfo"):
        (root / "proc" / name_).write_text(Path("/proc", name_).read_text())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            comm = (proc / "comm").read_text()
            files = ("comm", "stat") if comm.startswith(f"{MD}_") else ("comm", "io")
            if comm.startswith(f"{MD}_") or comm.strip() == "dd":
                target = root / "proc" / proc.name
                target.mkdir(parents=True, exist_ok=True)
                for file in files:
                    (target / file).write_text((proc / file).read_text())
        except OSError:
            continue  # the process ended meanwhile


def run_scenario(name: str, spec: dict[str, Any], conn: sqlite3.Connection) -> dict[str, Any]:
    say(f"--- {name}")
    set_speed_limits(1000, 200000)
    start_check(spec["disks"], spec.get("attrs", {}))
    competing = reader(spec["reader"]) if "reader" in spec else None
    sampler = Sampler(Host(Path("/proc"), Path("/sys")), conn)
    try:
        return _sample(name, spec, sampler)
    finally:
        if competing is not None:
            os.killpg(competing.pid, 15)
            competing.wait()
        md_path(MD, "sync_action").write_text("idle\n")
        stop_all()
        wipe(f"/dev/{d}" for d in spec["disks"])


def _sample(name: str, spec: dict[str, Any], sampler: Sampler) -> dict[str, Any]:
    ticks: list[dict[str, Any]] = []
    started = time.monotonic()
    captured: dict[str, float] = {}  # moment -> seconds into the run
    cpu_s = 0.0
    shown = False
    while True:
        elapsed = time.monotonic() - started
        if name == "bursts":
            done = elapsed >= spec["run_s"]
        else:  # until the verdict shows and both captures are taken
            done = elapsed >= RUN_S and shown and "t1" in captured
        if done or elapsed >= MAX_RUN_S:
            break
        cpu_before = time.process_time()
        tick = sampler.sample_once()
        cpu_s += time.process_time() - cpu_before
        diagnosis = tick.diagnoses.get(MD)
        view = diagnosis.shape().model_dump(mode="json") if diagnosis is not None else None
        ticks.append({"t": round(elapsed, 1), "diagnosis": view})
        if view is not None:
            say(f"{name} t={elapsed:.0f}: {view['verdict']} pending={view['pending']}")
            shown = name in [v["verdict"] for v in view["verdicts"]]
            holding = shown or name in view["pending"]
            if holding and "t0" not in captured and elapsed >= 35:
                capture(name, "t0")
                captured["t0"] = elapsed
            elif "t0" in captured and "t1" not in captured and elapsed >= captured["t0"] + 30:
                capture(name, "t1")
                captured["t1"] = elapsed
        time.sleep(max(TICK_S - (time.monotonic() - started) % TICK_S, 0.05))
    return {"ticks": ticks, "captured": captured, "sampler_cpu_s": cpu_s}


def scenarios() -> None:
    conn = db.connect(Path("/tmp/diagnosis.sqlite"))
    db.migrate(conn, REPO / "migrations")
    wanted = os.environ.get("DIAGNOSIS_SCENARIOS", ",".join(SCENARIOS)).split(",")
    results = {name: run_scenario(name, SCENARIOS[name], conn) for name in wanted}
    events = conn.execute(
        "SELECT ts, array, run_id, detail FROM events WHERE kind = 'diagnosis' ORDER BY id"
    ).fetchall()
    results["events"] = [dict(e) | {"detail": json.loads(e["detail"])} for e in events]
    (OUT / "diagnosis.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(scenarios)
