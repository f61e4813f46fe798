"""Guest scenario: an auto-tune sweep on a real RAID5 3->4 reshape, on HDD-like throttled disks
with DSM-like defaults, and what the kernel does with the stripe cache meanwhile.

Runs as root. mdboost serves with short steps (a sweep of under a minute: the stripe cache only,
read-ahead is set to the ladder's top beforehand), the array grows, auto-tune is pressed over
HTTP; the sweep must end before the grow's knee and keep its choice in the kernel; then revert
must put back every knob. MemAvailable is read before the sweep, while
the ladder holds its largest cache, after the sweep kept its choice and after the revert: how
much of a larger stripe cache md hands back when a lower value is written during a busy sync.
Results go to $OUT/facts.json for tests/realkernel/test_autotune_on_real_kernel.py.
"""

import os
import time
from pathlib import Path

from api_scenarios import Server, api, api_action, call, knobs
from bench_autotune import done_share
from bench_reshape import dsm_array_with_a_new_disk
from mdguest import main, md_path, read, record, say, sh, wait_for

STEPS = {
    "MDBOOST_AUTOTUNE_SETTLE_SECONDS": "1",
    "MDBOOST_AUTOTUNE_MEASURE_SECONDS": "4",
    "MDBOOST_AUTOTUNE_MAX_MEASURE_SECONDS": "8",
}


def mem_available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


def sweep_state() -> str | None:
    sweep = api("GET", "/api/tuning")["autotune"]
    return sweep["state"] if sweep else None


def scenario() -> None:
    Path("/tmp/mdboost").mkdir(exist_ok=True)
    os.environ.update(STEPS)
    server = Server()
    server.start()
    try:
        dsm_array_with_a_new_disk()
        # Read-ahead at the ladder's top already: only the stripe cache is swept, so the sweep
        # fits in a short test (scripts/bench_autotune.py sweeps both, for minutes).
        Path("/sys/block/md0/queue/read_ahead_kb").write_text("32768\n")
        record("mem_before_grow_mib", round(mem_available_mib()))
        sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4")
        wait_for(lambda: api_action("md0") == "reshape", "the sampler to see the reshape", 60, 0.2)
        originals = knobs()
        record("originals", originals)
        api("POST", "/api/autotune", {"array": "md0"})
        started = time.monotonic()
        top, mem_at_top = 0, None
        while sweep_state() == "running":
            cache = int(read(md_path("md0", "stripe_cache_size")))
            if cache >= top:
                top, mem_at_top = cache, mem_available_mib()
            if time.monotonic() - started > 240:
                raise TimeoutError("the sweep ran for 240 s")
            time.sleep(0.5)  # a sampling interval: the loop ends when the sweep does
        record("sweep_s", round(time.monotonic() - started, 1))
        record("done_share_at_sweep_end", done_share())
        record("reshaping_at_sweep_end", read(md_path("md0", "sync_action")))
        record("largest_cache_seen", top)
        record("mem_at_largest_cache_mib", round(mem_at_top or 0))
        record("sweep", api("GET", "/api/tuning")["autotune"])
        record("kept_in_kernel", knobs())
        record("mem_after_sweep_mib", round(mem_available_mib()))
        status, _ = call("POST", "/api/revert")
        record("revert_status", status)
        record("after_revert", knobs())
        record("reshaping_after_revert", read(md_path("md0", "sync_action")))
        record("mem_after_revert_mib", round(mem_available_mib()))
        say(f"sweep over in {time.monotonic() - started:.0f} s; reverted")
    finally:
        server.stop()


if __name__ == "__main__":
    main(scenario)
