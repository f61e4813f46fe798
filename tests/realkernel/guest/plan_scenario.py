"""Guest side of tests/realkernel/test_plan_on_real_kernel.py: does a plan keep its word?

Runs as root on HDD-like throttled disks. Per case: a fresh 3-disk RAID5 (64 KiB chunks, DSM-like
limits 10000 / 200000) that mdboost watches through a check and a grow to 4 disks; then
POST /api/plan for adding a fifth disk of the same size, and the real `mdadm --add` +
`--grow --raid-devices=5`, timed from the grow to md idle. The plan made after the check alone
(before the first grow) is timed against that first grow too. Case "disk": the disks set the
pace. Case "limit": the max limit is lowered to LIMIT_KIB_S before the second plan, so it holds
the second grow (about 10 minutes of the boot's 17 at 1500 KiB/s). The cases to run are the
arguments (default: both). Results in $OUT/facts.json.
"""

import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from api_scenarios import DATA, Server, api, api_array, wait_run_finished
from mdguest import (
    DISKS,
    main,
    md_path,
    mdstat_block,
    record,
    say,
    set_speed_limits,
    sh,
    stop_all,
    wait_for,
    wait_idle,
    wipe,
)

DSM_LIMITS = (10000, 200000)
LIMIT_KIB_S = 1500  # under what these disks grow at before the knee (2500-4200 KiB/s)


class Trace:
    """md0's progress and the members' /proc/diskstats once a second, so the host can see what
    each phase asked of the disks (requests and sectors, read and written) and how fast it went."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.rows.append(self.row())
            self.stop.wait(1.0)

    @staticmethod
    def row() -> list[Any]:
        block = mdstat_block("md0")
        progress = re.search(r"(check|resync|recovery|reshape) = *[0-9.]+% \((\d+)/(\d+)\)", block)
        disks = {}
        for line in Path("/proc/diskstats").read_text().splitlines():
            f = line.split()
            if f[2].startswith("vd"):  # reads, sectors read, writes, sectors written
                disks[f[2]] = [int(f[3]), int(f[5]), int(f[7]), int(f[9])]
        action = progress.group(1) if progress else None
        done = [int(progress.group(2)), int(progress.group(3))] if progress else None
        return [round(time.time(), 2), action, done, disks]

    def __enter__(self) -> "Trace":
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()
        self.rows.append(self.row())


def plan_add(disk: str) -> dict[str, Any]:
    disk_bytes = int(Path(f"/sys/block/{Path(disk).name}/size").read_text()) * 512
    plan: dict[str, Any] = api("POST", "/api/plan", {"change": "add", "disk_bytes": disk_bytes})
    say(plan["summary"])
    return plan


def grow(disk: str, members: int) -> float:
    """Add `disk` and grow onto it; seconds from the grow to md idle."""
    sh("mdadm", "/dev/md0", "--add", disk)
    started = time.monotonic()
    sh("mdadm", "--grow", "/dev/md0", f"--raid-devices={members}")
    wait_for(lambda: "reshape" in Path("/proc/mdstat").read_text(), "the reshape to start", 60)
    wait_idle("md0", 3600)
    return time.monotonic() - started


def compared(plan: dict[str, Any], real_s: float) -> dict[str, Any]:
    total = plan["total"]
    return {
        "planned_s": total["seconds"],
        "planned_low_s": total["low_s"],
        "planned_high_s": total["high_s"],
        "real_s": real_s,
        "error": (total["seconds"] - real_s) / real_s,
        "steps": plan["steps"],
    }


def case(name: str, server: Server) -> None:
    vda, vdb, vdc, vdd, vde = DISKS[:5]
    stop_all()
    wipe([vda, vdb, vdc, vdd, vde])
    set_speed_limits(*DSM_LIMITS)
    sh("mdadm", "--create", "/dev/md0", "--run", "--level=5", "--raid-devices=3",
       "--chunk=64", "--assume-clean", vda, vdb, vdc)  # fmt: skip
    shutil.rmtree(DATA, ignore_errors=True)  # this case's own history only
    server.start()
    with Trace() as check_trace:
        md_path("md0", "sync_action").write_text("check\n")
        wait_for(lambda: "check" in Path("/proc/mdstat").read_text(), "the check to start", 30)
        wait_idle("md0", 900)
    wait_run_finished("md0", "check")
    after_check = plan_add(vdd)
    with Trace() as grow_trace:
        first = compared(after_check, grow(vdd, 4))
    wait_run_finished("md0", "reshape")
    if name == "limit":
        set_speed_limits(DSM_LIMITS[0] // 10, LIMIT_KIB_S)
        # The plan caps by the limits the sampler's present holds: wait until it reads these.
        wait_for(
            lambda: (api_array("md0") or {})["sysfs"]["sync_speed_max_kb_s"] == LIMIT_KIB_S,
            "the API to show the lowered max",
            30,
        )
    second_plan = plan_add(vde)
    with Trace() as grow45_trace:
        second = compared(second_plan, grow(vde, 5))
    runs = api("GET", "/api/runs?array=md0")["runs"]
    traces = {"check": check_trace.rows, "grow34": grow_trace.rows, "grow45": grow45_trace.rows}
    record(name, {"after_check": first, "after_grow": second, "runs": runs, "traces": traces})
    say(f"{name}: after the check {first['error']:+.0%}, after a grow {second['error']:+.0%}")
    server.stop()


def scenario() -> None:
    server = Server()
    for name in sys.argv[1:] or ("disk", "limit"):
        case(name, server)
    stop_all()


if __name__ == "__main__":
    main(scenario)
