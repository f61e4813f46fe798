"""Guest side of tests/realkernel/test_plan_on_real_kernel.py (issue 31): does a plan keep its word?

Runs as root on HDD-like throttled disks. Per case: a fresh 3-disk RAID5 (64 KiB chunks, DSM-like
limits 10000 / 200000) that mdboost watches through a check and a grow to 4 disks; then
POST /api/plan for adding a fifth disk of the same size, and the real `mdadm --add` +
`--grow --raid-devices=5`, timed from the grow to md idle. The plan made after the check alone
(before the first grow) is timed against that first grow too. Case "disk": the disks set the
pace. Case "limit": the max limit is lowered to LIMIT_KIB_S before the second plan, so it holds
the second grow (about 10 minutes of the boot's 17 at 1500 KiB/s). The cases to run are the
arguments (default: both). Results in $OUT/facts.json.
"""

import shutil
import sys
import time
from pathlib import Path
from typing import Any

from api_scenarios import DATA, Server, api, api_array, wait_run_finished
from mdguest import (
    DISKS,
    main,
    md_path,
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
    md_path("md0", "sync_action").write_text("check\n")
    wait_for(lambda: "check" in Path("/proc/mdstat").read_text(), "the check to start", 30)
    wait_idle("md0", 900)
    wait_run_finished("md0", "check")
    after_check = plan_add(vdd)
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
    second = compared(plan_add(vde), grow(vde, 5))
    runs = api("GET", "/api/runs?array=md0")["runs"]
    record(name, {"after_check": first, "after_grow": second, "runs": runs})
    say(f"{name}: after the check {first['error']:+.0%}, after a grow {second['error']:+.0%}")
    server.stop()


def scenario() -> None:
    server = Server()
    for name in sys.argv[1:] or ("disk", "limit"):
        case(name, server)
    stop_all()


if __name__ == "__main__":
    main(scenario)
