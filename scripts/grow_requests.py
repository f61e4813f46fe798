"""What each grow of tests/realkernel/guest/plan_scenario.py asked of its disks, from the
members' per-second /proc/diskstats in its facts.json ("traces"): the figures behind the
planner's KERNEL_GROWS (app/planner/paces.py).

    .venv/bin/python scripts/grow_requests.py RUN_DIR/out/facts.json ...

Per grow (3 -> 4 and 4 -> 5), before its knee: the old members' reads and writes (KiB a request
as the guest issued them, and requests a second), the progress a member a second, and what each
request moved at the throttle's 120 requests/s (the size times the share of that rate the grow
used: what the planner's seek bound takes). Past the knee: its pace in multiples of the check's.
"""

import json
import sys
from pathlib import Path
from typing import Any

THROTTLE_REQUESTS_S = 120.0  # tests/realkernel/vmharness.py: HDD_LIKE
GROWS = {"grow34": (3, 4), "grow45": (4, 5)}

Row = list[
    Any
]  # [unix s, action, [done, total] KiB a member, {disk: [reads, r sectors, writes, w sectors]}]


def _rows(rows: list[Row], action: str) -> list[Row]:
    return [r for r in rows if r[1] == action and r[2]]


def _pace(a: Row, b: Row) -> float:
    return (b[2][0] - a[2][0]) / (b[0] - a[0])


def check_pace(trace: list[Row]) -> float:
    rows = _rows(trace, "check")
    return _pace(rows[0], rows[-1])


def grow(trace: list[Row], old: int, new: int, check: float) -> dict[str, float]:
    knee = (old - 1) / (new - 1)
    rows = _rows(trace, "reshape")
    # Leave out its first seconds (md starts the reshape) and the approach to the knee.
    before = [r for r in rows if r[2][0] / r[2][1] < knee * 0.97][2:]
    after = [r for r in rows if r[2][0] / r[2][1] >= knee]
    a, b = before[0], before[-1]
    seconds = b[0] - a[0]
    members = sorted(a[3])[:old]
    reads = sum(b[3][d][0] - a[3][d][0] for d in members)
    read_kib = sum(b[3][d][1] - a[3][d][1] for d in members) / 2
    writes = sum(b[3][d][2] - a[3][d][2] for d in members)
    write_kib = sum(b[3][d][3] - a[3][d][3] for d in members) / 2
    rate = (reads + writes) / old / seconds
    share = rate / THROTTLE_REQUESTS_S
    return {
        "read_kib": read_kib / reads,
        "write_kib": write_kib / writes,
        "requests_s": rate,
        "pace_kib_s": _pace(a, b),
        "moved_read_kib": read_kib / reads * share,
        "moved_write_kib": write_kib / writes * share,
        "after_knee_x_check": _pace(after[0], after[-1]) / check if len(after) > 1 else 0.0,
    }


def main(paths: list[str]) -> None:
    for path in paths:
        facts = json.loads(Path(path).read_text())
        for case, found in facts.items():
            if not isinstance(found, dict) or "traces" not in found:
                continue
            traces = found["traces"]
            check = check_pace(traces["check"])
            planned = found["after_check"]
            print(
                f"{path} [{case}] check {check:.0f} KiB/s; from the check alone planned "
                f"{planned['planned_s']:.1f} s, real {planned['real_s']:.1f} s "
                f"({planned['error']:+.1%})"
            )
            for name, (old, new) in GROWS.items():
                g = grow(traces[name], old, new, check)
                print(
                    f"  {old} -> {new}: {g['read_kib']:.0f} KiB reads, {g['write_kib']:.0f} KiB "
                    f"writes, {g['requests_s']:.0f} requests/s a member, {g['pace_kib_s']:.0f} "
                    f"KiB/s; at {THROTTLE_REQUESTS_S:.0f}/s each moved {g['moved_read_kib']:.0f} "
                    f"/ {g['moved_write_kib']:.0f} KiB; past the knee "
                    f"{g['after_knee_x_check']:.2f}x the check"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
