"""Guest side of scripts/bench_autotune.py: a manual stripe-cache sweep, then auto-tune, on real
RAID5 3->4 reshapes with HDD-like throttled disks and DSM-like defaults (issue 18).

Runs as root in the VM. Each trial builds a fresh 3-disk RAID5 (64 KiB chunks, --assume-clean),
sets DSM-like knobs and grows it to 4 disks. A "fixed" trial sets one stripe_cache_size right
after the grow starts (the manual sweep; 256 is DSM's own value); an "autotune" trial presses
mdboost's auto-tune over HTTP instead, once the sampler has seen the reshape, and lets the sweep
pick. Rounds repeat the whole set, in a rotated order. Results go to $OUT/bench.json.
"""

import json
import os
import time
from pathlib import Path
from typing import Any

from api_scenarios import Server, api, api_action
from bench_reshape import Reader, dsm_array_with_a_new_disk
from mdguest import OUT, main, md_path, read, say, sh, wait_for, wait_idle

ROUNDS = int(os.environ.get("ROUNDS", "1"))
READER = os.environ.get("READER", "0") == "1"
CANDIDATES = [int(v) for v in os.environ.get("CANDIDATES", "256 1024 4096 16384 32768").split()]
# Auto-tune's step lengths, scaled to a reshape of minutes (a NAS's takes days: the defaults
# there are 30 s settle, 60-300 s measure); the sampler ticks every second.
AUTOTUNE_ENV = {
    "MDBOOST_AUTOTUNE_SETTLE_SECONDS": os.environ.get("SETTLE", "2"),
    "MDBOOST_AUTOTUNE_MEASURE_SECONDS": os.environ.get("MEASURE", "5"),
    "MDBOOST_AUTOTUNE_MAX_MEASURE_SECONDS": os.environ.get("MAX_MEASURE", "10"),
}


def trial(kind: str, value: int | None, number: int) -> dict[str, Any]:
    dsm_array_with_a_new_disk()
    reader = Reader("/dev/md0")
    if READER:
        reader.start()
    started = time.monotonic()
    sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4")
    sweep: Any = None
    if kind == "fixed":
        md_path("md0", "stripe_cache_size").write_text(f"{value}\n")
    else:
        wait_for(lambda: api_action("md0") == "reshape", "the sampler to see the reshape", 60, 0.2)
        api("POST", "/api/autotune", {"array": "md0"})
    during = read(md_path("md0", "stripe_cache_size"))
    if kind == "autotune":
        sweep = wait_for(_sweep_over, "the sweep to end", 1800, 0.5)
        sweep_s = time.monotonic() - started
    wait_idle("md0", 3600)
    seconds = time.monotonic() - started
    reader.stop.set()
    if READER:
        reader.join()
    per_device_kib = int(Path("/sys/block/md0/md/component_size").read_text())
    if kind == "autotune":  # mdboost reverts by itself when the reshape ends
        wait_for(lambda: not api("GET", "/api/tuning")["active"], "the revert", 60, 0.5)
    result: dict[str, Any] = {
        "trial": number,
        "kind": kind,
        "stripe_cache": value,
        "seconds": round(seconds, 1),
        "per_device_mib": per_device_kib / 1024,
        "reshape_mb_s": round(per_device_kib * 1024 / seconds / 1e6, 2),
        "reader_mb_s": round(reader.bytes / seconds / 1e6, 2) if READER else None,
        "stripe_cache_during": during,
    }
    if sweep is not None:
        result |= {"sweep": sweep, "sweep_s": round(sweep_s, 1)}
    say(json.dumps({k: v for k, v in result.items() if k != "sweep"}))
    return result


def _sweep_over() -> dict[str, Any] | None:
    sweep = api("GET", "/api/tuning")["autotune"]
    if sweep is None or sweep["state"] == "running":
        return None
    return dict(sweep)


def scenario() -> None:
    Path("/tmp/mdboost").mkdir(exist_ok=True)
    os.environ.update(AUTOTUNE_ENV)
    server = Server()
    server.start()
    plan: list[tuple[str, int | None]] = [("fixed", v) for v in CANDIDATES] + [("autotune", None)]
    results: list[dict[str, Any]] = []
    try:
        for round_number in range(ROUNDS):
            shift = round_number % len(plan)
            for kind, value in plan[shift:] + plan[:shift]:
                results.append(trial(kind, value, len(results) + 1))
                (OUT / "bench.json").write_text(json.dumps(results, indent=1))
    finally:
        server.stop()


if __name__ == "__main__":
    main(scenario)
