"""Record real-kernel md runs for the forecast backtest: real5s-<batch>-*.csv.

    python3 scripts/record_real5s.py --batch a              # every run of batch a not yet done
    python3 scripts/record_real5s.py --batch b --only grow34-disk-long --jobs 1
    python3 scripts/record_real5s.py --batch a --convert     # the 5 s fixtures again, from raw CSVs
    python3 scripts/record_real5s.py --list                  # the runs of every batch
    python3 scripts/record_real5s.py --batch c510            # batch c on Linux 5.10 (bullseye)

Batch c is one batch per kernel generation: c510, c61 and c612 boot the newest Debian
bullseye, bookworm and trixie kernels (build each with ../shared/tools/mdvm/build.sh,
KERNEL_SUITE=<suite> MDVM_BUILD=/tmp/mdvm-build-<suite>; bookworm is the default /tmp/mdvm-build).

Each run boots Debian's kernel in QEMU through ../shared/tools/mdvm (build it first with its
build.sh) with its own fresh disks (size, count, HDD-like throttling, one slow member), and runs
scripts/mdvm_guest/mdrec.py inside: it builds md0, starts the run (a grow, a resync, a
recovery, a check), samples at 1 Hz, plays the bursts of competing I/O and a person's knob
changes, and writes the 1 Hz CSV. That raw CSV and its meta.json (what happened when) go to
RECORDINGS/<batch>/ (default /work/recordings, outside the repo); a 5 s version goes to
tests/fixtures/runs/real5s-<batch>-<class>-<name>.csv. A run already in RECORDINGS is skipped.

--jobs 2 runs a "disk" lane (disk-bound runs, which keep one host core busy under TCG) beside a
"limit" lane (runs held by a low max, nearly idle) so the disk-bound speeds see less contention.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUEST = REPO / "scripts" / "mdvm_guest"
FIXTURES = REPO / "tests" / "fixtures" / "runs"
HDD = "throttling.bps-total=60000000,throttling.iops-total=120"
DSM = {"min": 10000, "max": 200000}  # DSM-like global limits
STEP_S = 5


def slow(factor: int) -> str:
    """Throttling for a member `factor` times slower than an HDD-like one."""
    return f"throttling.bps-total={60000000 // factor},throttling.iops-total={120 // factor}"


def knee(level: int, old: int, new: int) -> str:
    parity = 2 if level == 6 else 1
    return f"{(old - parity) / (new - parity):.4f}"


def run(
    name,
    cls,
    lane,
    *,
    level=5,
    devices=3,
    start="grow",
    grow_to=None,
    disk="1G",
    throttle=None,
    slow_member=None,
    glob=None,
    array=None,
    stripe_cache=None,
    bursts=None,
    person=(),
    max_s=3600,
    chunk=None,
    note="",
):
    """One run: the VM's disks and the guest scenario."""
    if start == "grow" and grow_to is None:
        grow_to = devices + 1
    if glob is None:  # disk-bound: DSM's limits; limit-bound: the kernel's default min
        glob = DSM if lane == "disk" else {"min": 1000, "max": 200000}
    guest = {
        "name": name,
        "level": level,
        "devices": devices,
        "start": start,
        "global": glob,
        "person": list(person),
        "max_s": max_s,
    }
    if grow_to:
        guest["grow_to"] = grow_to
        guest["knee"] = knee(level, devices, grow_to)
    if array:
        guest["array"] = array
    if stripe_cache:
        guest["stripe_cache"] = stripe_cache
    if chunk:
        guest["chunk"] = chunk
    if bursts:
        guest["bursts"] = bursts
    if throttle is None:  # limit-bound runs: unthrottled disks, so only the max holds md
        throttle = lane == "disk"
    return {
        "name": name,
        "cls": cls,
        "lane": lane,
        "disk": disk,
        "ndisks": grow_to or devices,
        "throttle": throttle,
        "slow_member": slow_member,
        "guest": guest,
        "note": note,
    }


def bursts(
    seed,
    every=(30, 90),
    length=(10, 40),
    kinds=("read_md", "write_md", "read_member"),
    first=None,
    until_frac=None,
):
    b = {"seed": seed, "every": list(every), "length": list(length), "kinds": list(kinds)}
    if first:
        b["first"] = list(first)
    if until_frac is not None:
        b["until_frac"] = until_frac  # no burst starts past this share of the run
    return b


# Batch c's kernels: the batch name's suffix -> the Debian suite whose kernel boots.
KERNELS = {"c510": "bullseye", "c61": "bookworm", "c612": "trixie"}
KERNELS.update({x + b[1:]: suite for b, suite in list(KERNELS.items()) for x in "dfghijk"})


def held_out_mix(
    seed: int,
    *,
    steps: tuple[str, int] = ("768M", 4000),
    raw: tuple[str, int] = ("1G", 8000),
    raw_every: tuple[int, int] = (20, 50),
    recovery_disk: str = "2G",
    resync_disk: str = "2G",
) -> list[dict]:
    """The held-out mix for one kernel: a low limit over a large stripe cache (md's
    position moves in coarse steps), bursts on a raw member device, a resync that speeds up once
    the bursts stop, a recovery with bursts. `steps` and `raw` are (disk size, max)."""
    return [
        run(
            "limit-steps",
            "grow34",
            "limit",
            disk=steps[0],
            chunk=512,
            stripe_cache=16384,
            array={"max": steps[1]},
            note=f"raid5 3->4 grow, 512 KiB chunks, stripe cache 16384, sync_speed_max "
            f"{steps[1]}: md's position moves a window at a time",
        ),
        run(
            "limit-rawbursts",
            "recovery",
            "limit",
            devices=4,
            start="recovery",
            disk=raw[0],
            array={"max": raw[1]},
            bursts=bursts(seed, every=raw_every, length=(10, 40), kinds=("read_member",)),
            note=f"raid5 recovery at sync_speed_max {raw[1]}, {raw[0]} disks, dd reads of raw "
            "member devices",
        ),
        run(
            "disk-speedup",
            "resync",
            "disk",
            devices=4,
            start="resync",
            disk=resync_disk,
            bursts=bursts(seed + 1, every=(10, 25), length=(20, 40), first=(1, 3), until_frac=0.5),
            note=f"raid5 --force resync, {resync_disk} HDD-like disks, bursts until half-way: "
            "it speeds up",
        ),
        run(
            "disk-bursts",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk=recovery_disk,
            bursts=bursts(seed + 2, every=(30, 60), first=(10, 20)),
            note=f"raid5 recovery, {recovery_disk} HDD-like disks, bursts",
        ),
    ]


def batch_c(seed: int, short: bool) -> list[dict]:
    """The first held-out batch per kernel: batch b's mix (disk- and limit-bound, bursts)
    plus held_out_mix's runs."""
    runs = held_out_mix(seed)
    if not short:
        runs += [
            run(
                "disk-rawbursts",
                "grow45",
                "disk",
                devices=4,
                grow_to=5,
                bursts=bursts(seed + 3, every=(25, 60), kinds=("read_member",)),
                note="raid5 4->5 grow, HDD-like, dd reads of raw member devices",
            ),
            run(
                "limit-steady",
                "check",
                "limit",
                devices=4,
                start="check",
                disk="2G",
                array={"max": 9000},
                note="raid5 check held by sync_speed_max 9000",
            ),
        ]
    return runs


def batch_d(seed: int) -> list[dict]:
    """The third held-out batch, one per kernel, recorded on a quiet host (one VM at a
    time, under /work/coord/qemu.lock): held_out_mix's runs, 5-8 minutes each, with other sizes,
    limits and seeds than batch c."""
    return held_out_mix(
        seed,
        steps=("1G", 2500),
        raw=("2G", 6000),
        raw_every=(25, 60),
        recovery_disk="8G",
        resync_disk="5G",
    )


def batch_f(kernel: str) -> list[dict]:
    """The fourth held-out batch (after FROZEN-f), 3-6 minute runs, one VM at a time:
    batch b's mix (grows 3->4, 4->5 and raid6, a resync, a recovery, a check; disk- and
    limit-bound; bursts, a person's change, a slow member) spread over the three kernels, plus
    the held-out cases: a low limit with coarse steps, raw-device bursts, a resync that speeds
    up, a recovery with bursts, and a grow held by its max over a large stripe cache."""
    if kernel == "61":
        return [
            run(
                "limit-cache",
                "grow34",
                "limit",
                disk="1G",
                stripe_cache=16384,
                array={"max": 4000},
                note="raid5 3->4 grow, 64 KiB chunks, stripe cache 16384, sync_speed_max 4000",
            ),
            run(
                "disk-bursts-5g",
                "recovery",
                "disk",
                devices=4,
                start="recovery",
                disk="5G",
                bursts=bursts(91, every=(30, 60), first=(15, 25)),
                note="raid5 recovery, 5 GiB HDD-like disks, bursts",
            ),
            run(
                "disk-bursts",
                "grow45",
                "disk",
                devices=4,
                grow_to=5,
                disk="1536M",
                bursts=bursts(92, every=(40, 90)),
                note="raid5 4->5 grow, 1.5 GiB HDD-like disks, bursts",
            ),
            run(
                "limit-steady",
                "check",
                "limit",
                devices=4,
                start="check",
                disk="2G",
                array={"max": 7000},
                note="raid5 check held by sync_speed_max 7000",
            ),
        ]
    if kernel == "612":
        return [
            run(
                "limit-steps",
                "grow34",
                "limit",
                disk="768M",
                chunk=512,
                stripe_cache=16384,
                array={"max": 3000},
                note="raid5 3->4 grow, 512 KiB chunks, stripe cache 16384, sync_speed_max "
                "3000: md's position moves a window at a time",
            ),
            run(
                "limit-rawbursts",
                "recovery",
                "limit",
                devices=4,
                start="recovery",
                disk="1536M",
                array={"max": 5000},
                bursts=bursts(93, every=(20, 50), kinds=("read_member",)),
                note="raid5 recovery at sync_speed_max 5000, 1.5 GiB disks, dd reads of raw "
                "member devices",
            ),
            run(
                "disk-steady",
                "grow6",
                "disk",
                level=6,
                devices=4,
                grow_to=5,
                disk="1536M",
                note="raid6 4->5 grow, 1.5 GiB HDD-like disks, nothing else",
            ),
            run(
                "limit-changes",
                "resync",
                "limit",
                devices=4,
                start="resync",
                disk="1536M",
                glob={"min": 1000, "max": 8000},
                person=[at(0.4, global_max=4000)],
                note="raid5 resync at speed_limit_max 8000, lowered to 4000 at 40 %",
            ),
        ]
    return [
        run(
            "disk-speedup",
            "resync",
            "disk",
            devices=4,
            start="resync",
            disk="4G",
            bursts=bursts(94, every=(10, 25), length=(20, 40), first=(1, 3), until_frac=0.5),
            note="raid5 --force resync, 4 GiB HDD-like disks, bursts until half-way: it speeds up",
        ),
        run(
            "limit-cache",
            "grow34",
            "limit",
            disk="1280M",
            stripe_cache=16384,
            array={"max": 5000},
            note="raid5 3->4 grow, 64 KiB chunks, stripe cache 16384, sync_speed_max 5000",
        ),
        run(
            "limit-bursts",
            "grow45",
            "limit",
            devices=4,
            grow_to=5,
            disk="1G",
            array={"max": 5000},
            bursts=bursts(95, every=(30, 60)),
            note="raid5 4->5 grow at sync_speed_max 5000, bursts",
        ),
        run(
            "disk-slow",
            "grow34",
            "disk",
            disk="768M",
            slow_member=(2, 3),
            note="raid5 3->4 grow, 768 MiB disks, member 2 at 1/3 of the others' throttle",
        ),
    ]


def batch_g(kernel: str) -> list[dict]:
    """The fifth held-out batch (after FROZEN-g), recorded one run per VM-lock hold, as
    many as the VM time allows: the held-out classes spread over the three kernels, each run also
    recording the kernel's release and the chunk size. A disk-bound raid5 grow on 6.12 judges
    6.12's own knee figure (learnt from one raid6 grow); the 4->6 grow has its knee at 1/2."""
    runs = {
        "grow34-disk-steady": run(
            "disk-steady",
            "grow34",
            "disk",
            disk="1G",
            note="raid5 3->4 grow, 1 GiB HDD-like disks, nothing else",
        ),
        "grow34-limit-steps": run(
            "limit-steps",
            "grow34",
            "limit",
            disk="1G",
            chunk=512,
            stripe_cache=16384,
            array={"max": 3500},
            note="raid5 3->4 grow, 512 KiB chunks, stripe cache 16384, sync_speed_max 3500: "
            "md's position moves a window at a time",
        ),
        "grow34-limit-cache": run(
            "limit-cache",
            "grow34",
            "limit",
            disk="1G",
            stripe_cache=16384,
            array={"max": 4500},
            note="raid5 3->4 grow, 64 KiB chunks, stripe cache 16384, sync_speed_max 4500",
        ),
        "grow6-disk-steady": run(
            "disk-steady",
            "grow6",
            "disk",
            level=6,
            devices=4,
            grow_to=6,
            disk="1G",
            note="raid6 4->6 grow, 1 GiB HDD-like disks, nothing else",
        ),
        "resync-disk-speedup": run(
            "disk-speedup",
            "resync",
            "disk",
            devices=4,
            start="resync",
            disk="6G",
            bursts=bursts(
                int(kernel) + 100, every=(10, 25), length=(20, 40), first=(1, 3), until_frac=0.5
            ),
            note="raid5 --force resync, 6 GiB HDD-like disks, bursts until half-way: it speeds up",
        ),
        "recovery-disk-bursts": run(
            "disk-bursts",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk="6G",
            bursts=bursts(int(kernel) + 200, every=(30, 60), first=(15, 25)),
            note="raid5 recovery, 6 GiB HDD-like disks, bursts",
        ),
        "recovery-limit-rawbursts": run(
            "limit-rawbursts",
            "recovery",
            "limit",
            devices=4,
            start="recovery",
            disk="1536M",
            array={"max": 5500},
            bursts=bursts(int(kernel) + 300, every=(20, 50), kinds=("read_member",)),
            note="raid5 recovery at sync_speed_max 5500, 1.5 GiB disks, dd reads of raw member "
            "devices",
        ),
    }
    return list(runs.values())


def round_four(kernel: str, seed: int) -> list[dict]:
    """The held-out batches after FROZEN-h (batch h) and FROZEN-i (batch i): batch b's
    mix (grows 3->4, 4->5 and raid6, a resync, a recovery, a check; disk- and limit-bound;
    bursts, a person's change) plus the held-out cases (a low limit with coarse steps, raw-device
    bursts, a resync that speeds up, a recovery with bursts), the same list on every kernel with
    the batch's own seeds; one run per VM-lock hold (--only CLASS-NAME). Bursty runs last 4-5
    minutes, longer than batch g's, so fewer of their rows are a lottery of one burst."""
    grow_disk = "4G" if kernel == "510" else "1G"  # 5.10 grows ~3x faster per byte
    runs = [
        run("disk-steady", "grow34", "disk", disk=grow_disk, note="raid5 3->4 grow, nothing else"),
        run(
            "limit-steps",
            "grow34",
            "limit",
            disk="1G",
            chunk=512,
            stripe_cache=16384,
            array={"max": 3500},
            note="raid5 3->4 grow, 512 KiB chunks, stripe cache 16384, sync_speed_max 3500: "
            "md's position moves a window at a time",
        ),
        run(
            "limit-bursts",
            "grow34",
            "limit",
            disk="1G",
            array={"max": 5000},
            bursts=bursts(seed + 1, every=(30, 60)),
            note="raid5 3->4 grow at sync_speed_max 5000, bursts",
        ),
        run(
            "disk-bursts",
            "grow45",
            "disk",
            devices=4,
            grow_to=5,
            disk=grow_disk,
            bursts=bursts(seed + 2, every=(40, 90)),
            note="raid5 4->5 grow, HDD-like disks, bursts",
        ),
        run(
            "disk-steady",
            "grow6",
            "disk",
            level=6,
            devices=4,
            grow_to=5,
            disk=grow_disk,
            note="raid6 4->5 grow, HDD-like disks, nothing else",
        ),
        run(
            "disk-speedup",
            "resync",
            "disk",
            devices=4,
            start="resync",
            disk="8G",
            bursts=bursts(seed + 3, every=(10, 25), length=(20, 40), first=(1, 3), until_frac=0.5),
            note="raid5 --force resync, 8 GiB HDD-like disks, bursts until half-way: it speeds up",
        ),
        run(
            "limit-changes",
            "resync",
            "limit",
            devices=4,
            start="resync",
            disk="1536M",
            glob={"min": 1000, "max": 8000},
            person=[at(0.4, global_max=4000)],
            note="raid5 resync at speed_limit_max 8000, lowered to 4000 at 40 %",
        ),
        run(
            "disk-bursts",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk="8G",
            bursts=bursts(seed + 4, every=(30, 60), first=(15, 25)),
            note="raid5 recovery, 8 GiB HDD-like disks, bursts",
        ),
        run(
            "limit-rawbursts",
            "recovery",
            "limit",
            devices=4,
            start="recovery",
            disk="1536M",
            array={"max": 5500},
            bursts=bursts(seed + 5, every=(20, 50), kinds=("read_member",)),
            note="raid5 recovery at sync_speed_max 5500, dd reads of raw member devices",
        ),
        run(
            "limit-steady",
            "check",
            "limit",
            devices=4,
            start="check",
            disk="1536M",
            array={"max": 7000},
            note="raid5 check held by sync_speed_max 7000",
        ),
    ]
    return runs


def at(when, **knobs):
    key = "at_frac" if isinstance(when, float) else "at_s"
    return {key: when, "set": knobs}


def on(trigger, after_s=0, **knobs):
    return {"on": trigger, "after_s": after_s, "set": knobs}


BATCHES = {
    "a": [
        run(
            "disk-steady",
            "grow34",
            "disk",
            disk="2G",
            note="raid5 3->4 grow, HDD-like disks, DSM limits, nothing else",
        ),
        run(
            "disk-bursts",
            "grow45",
            "disk",
            devices=4,
            grow_to=5,
            bursts=bursts(11),
            note="raid5 4->5 grow, HDD-like, competing dd reads/writes",
        ),
        run(
            "disk-steady",
            "grow6",
            "disk",
            level=6,
            devices=4,
            grow_to=5,
            note="raid6 4->5 grow, HDD-like, DSM limits",
        ),
        run(
            "limit-steady",
            "grow34",
            "limit",
            disk="2G",
            array={"max": 8000},
            glob=DSM,
            note="raid5 3->4 grow, sync_speed_max 8000 under DSM's min 10000: md runs at the "
            "min (a max below the min does not bind)",
        ),
        run(
            "limit-long",
            "resync",
            "limit",
            devices=4,
            start="resync",
            disk="4G",
            glob={"min": 1000, "max": 3000},
            bursts=bursts(16, every=(120, 240)),
            max_s=5400,
            note="raid5 --force resync at speed_limit_max 3000 on 4 GiB disks (~23 min), "
            "rare bursts",
        ),
        run(
            "disk-bursts",
            "resync",
            "disk",
            devices=4,
            start="resync",
            bursts=bursts(12),
            note="raid5 --force create resync, HDD-like, bursts",
        ),
        run(
            "limit-bursts",
            "recovery",
            "limit",
            devices=4,
            start="recovery",
            disk="2G",
            array={"max": 12000},
            bursts=bursts(13),
            note="raid5 recovery held by sync_speed_max 12000, bursts pull it to min",
        ),
        run(
            "disk-bursts",
            "check",
            "disk",
            devices=4,
            start="check",
            bursts=bursts(14),
            note="raid5 check, HDD-like, bursts",
        ),
        run(
            "disk-changes",
            "grow34",
            "disk",
            disk="2G",
            bursts=bursts(15, every=(60, 90)),
            person=[
                at(60, global_max=2000),
                at(150, global_max=200000),
                at(0.45, stripe_cache=4096),
            ],
            note="raid5 3->4 grow; a person lowers speed_limit_max to 2000 at 60 s, restores "
            "200000 at 150 s, stripe cache 256 -> 4096 at 45 %; a few bursts",
        ),
        run(
            "limit-changes",
            "grow45",
            "limit",
            devices=4,
            grow_to=5,
            array={"max": 6000},
            person=[at(90, array_max=12000), at(0.6, array_max=4000)],
            note="raid5 4->5 grow at sync_speed_max 6000, raised to 12000 at 90 s, "
            "lowered to 4000 at 60 %",
        ),
        run(
            "disk-slow",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            slow_member=(1, 4),
            note="raid5 recovery, member 1 at 1/4 of the others' throttle",
        ),
        run(
            "disk-slow-long",
            "grow34",
            "disk",
            disk="2G",
            slow_member=(0, 4),
            max_s=5400,
            note="raid5 3->4 grow, 2 GiB disks, member 0 at 1/4 throttle: a long disk-bound run",
        ),
        run(
            "limit-changes",
            "check",
            "limit",
            devices=4,
            start="check",
            disk="2G",
            array={"max": 12000},
            bursts=bursts(17, every=(40, 80)),
            person=[on("burst_start", after_s=30, array_min=8000), at(0.5, array_max=6000)],
            note="raid5 check at sync_speed_max 12000; a person raises min to 8000 during a "
            "burst, later lowers max to 6000",
        ),
        run(
            "disk-changes",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk="2G",
            bursts=bursts(18, every=(40, 70)),
            person=[on("burst_start", after_s=20, array_min=50000), at(0.6, stripe_cache=8192)],
            note="raid5 recovery, HDD-like, bursts; a person raises min to 50000 during a "
            "burst; stripe cache 256 -> 8192 at 60 %",
        ),
        run(
            "disk-bursts-3g",
            "resync",
            "disk",
            level=6,
            devices=4,
            start="resync",
            disk="3G",
            bursts=bursts(19, every=(30, 60), first=(15, 30)),
            note="raid6 create resync (md resyncs a new raid6), 3 GiB HDD-like disks, bursts "
            "(added: the 1 GiB resync and check were over in 1-1.5 min)",
        ),
        run(
            "disk-steady-4g",
            "check",
            "disk",
            devices=4,
            start="check",
            disk="4G",
            note="raid5 check of 4 GiB HDD-like disks, nothing else",
        ),
    ],
    # Batch b: the held-out batch, recorded after the model was frozen (/work/recordings/FROZEN).
    # Same classes as a, other sizes, seeds, limits and change times; two runs over 20 minutes.
    "b": [
        run(
            "disk-steady-3g",
            "grow34",
            "disk",
            disk="3G",
            note="raid5 3->4 grow, 3 GiB HDD-like disks, DSM limits, nothing else",
        ),
        run(
            "disk-bursts",
            "grow45",
            "disk",
            devices=4,
            grow_to=5,
            disk="2G",
            bursts=bursts(21, every=(40, 100)),
            note="raid5 4->5 grow, 2 GiB HDD-like disks, competing dd reads/writes",
        ),
        run(
            "disk-bursts",
            "grow6",
            "disk",
            level=6,
            devices=4,
            grow_to=5,
            disk="2G",
            bursts=bursts(22, every=(50, 110)),
            note="raid6 4->5 grow, 2 GiB HDD-like disks, bursts",
        ),
        run(
            "disk-steady-3g",
            "resync",
            "disk",
            devices=4,
            start="resync",
            disk="3G",
            note="raid5 --force resync, 3 GiB HDD-like disks, nothing else",
        ),
        run(
            "disk-bursts-3g",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk="3G",
            bursts=bursts(23, every=(30, 70), first=(20, 40)),
            note="raid5 recovery, 3 GiB HDD-like disks, bursts",
        ),
        run(
            "disk-bursts-3g",
            "check",
            "disk",
            devices=4,
            start="check",
            disk="3G",
            bursts=bursts(24, every=(30, 70), first=(20, 40)),
            note="raid5 check, 3 GiB HDD-like disks, bursts",
        ),
        run(
            "disk-changes",
            "grow34",
            "disk",
            disk="2G",
            person=[
                at(90, global_max=3000),
                at(200, global_max=200000),
                at(0.5, stripe_cache=2048),
            ],
            note="raid5 3->4 grow; a person lowers speed_limit_max to 3000 at 90 s, restores "
            "200000 at 200 s, stripe cache 256 -> 2048 at 50 %",
        ),
        run(
            "disk-slow",
            "recovery",
            "disk",
            devices=4,
            start="recovery",
            disk="2G",
            slow_member=(2, 3),
            note="raid5 recovery, 2 GiB disks, member 2 at 1/3 of the others' throttle",
        ),
        run(
            "disk-slow-long",
            "grow34",
            "disk",
            disk="3G",
            slow_member=(2, 4),
            max_s=5400,
            note="raid5 3->4 grow, 3 GiB disks, member 2 at 1/4 throttle: a long disk-bound run",
        ),
        run(
            "limit-steady",
            "grow34",
            "limit",
            disk="2G",
            array={"max": 6000},
            note="raid5 3->4 grow held by sync_speed_max 6000, unthrottled disks",
        ),
        run(
            "limit-bursts",
            "grow45",
            "limit",
            devices=4,
            grow_to=5,
            array={"max": 5000},
            bursts=bursts(25, every=(30, 60)),
            note="raid5 4->5 grow at sync_speed_max 5000, bursts pull it to min",
        ),
        run(
            "limit-steady",
            "grow6",
            "limit",
            level=6,
            devices=4,
            grow_to=5,
            array={"max": 5000},
            note="raid6 4->5 grow held by sync_speed_max 5000",
        ),
        run(
            "limit-long",
            "resync",
            "limit",
            devices=4,
            start="resync",
            disk="4G",
            glob={"min": 1000, "max": 3200},
            bursts=bursts(26, every=(150, 300)),
            max_s=5400,
            note="raid5 --force resync at speed_limit_max 3200 on 4 GiB disks (~22 min), "
            "rare bursts",
        ),
        run(
            "limit-changes",
            "recovery",
            "limit",
            devices=4,
            start="recovery",
            disk="2G",
            array={"max": 10000},
            person=[at(60, array_max=20000), at(0.7, array_max=6000)],
            note="raid5 recovery at sync_speed_max 10000, raised to 20000 at 60 s, lowered "
            "to 6000 at 70 %",
        ),
        run(
            "limit-steady",
            "check",
            "limit",
            devices=4,
            start="check",
            disk="2G",
            array={"max": 9000},
            note="raid5 check held by sync_speed_max 9000",
        ),
        run(
            "limit-changes",
            "resync",
            "limit",
            devices=4,
            start="resync",
            disk="2G",
            glob={"min": 1000, "max": 8000},
            person=[at(0.4, global_max=4000)],
            note="raid5 resync at speed_limit_max 8000, lowered to 4000 at 40 %",
        ),
        run(
            "limit-bursts",
            "grow34",
            "limit",
            disk="2G",
            array={"max": 9000},
            bursts=bursts(27, every=(40, 80)),
            note="raid5 3->4 grow at sync_speed_max 9000, bursts",
        ),
        run(
            "limit-bursts",
            "check",
            "limit",
            devices=4,
            start="check",
            disk="2G",
            array={"max": 10000},
            bursts=bursts(28, every=(30, 60)),
            note="raid5 check at sync_speed_max 10000, bursts",
        ),
    ],
    # Batch c: held out, recorded after the model was frozen (/work/recordings/FROZEN-c),
    # one per kernel generation.
    # c61 got the short list too: the host's load average was 20-26 while batch c was recorded
    # and each run took ~10 minutes (its grow45 and check runs did not fit before the deadline).
    "c61": batch_c(31, short=True),
    "c510": batch_c(41, short=True),
    "c612": batch_c(51, short=True),
    # Batch d: batch c again on a quiet host, every boot alone under the VM lock.
    "d61": batch_d(61),
    "d510": batch_d(71),
    "d612": batch_d(81),
    # Batch f: held out for FROZEN-f, one VM at a time (batch e was never recorded:
    # FROZEN-e froze the model batch d's last four runs were judged on).
    "f61": batch_f("61"),
    "f612": batch_f("612"),
    "f510": batch_f("510"),
    # Batch g: held out for FROZEN-g, the same list on every kernel; one run per
    # VM-lock hold, a mix across the kernels as VM time allows (--only CLASS-NAME).
    "g61": batch_g("61"),
    "g612": batch_g("612"),
    "g510": batch_g("510"),
    # Batches h, i, j and k: held out for FROZEN-h, -i, -j and -k, the same list on
    # every kernel with the batch's own seeds, a mix across the kernels as VM time allows.
    **{
        f"{b}{k}": round_four(k, seed + int(k))
        for b, seed in (("h", 1000), ("i", 2000), ("j", 3000), ("k", 4000))
        for k in ("61", "612", "510")
    },
    # Probes (training, recorded before the freeze): what a low max does to md's
    # position with a small and a large stripe cache.
    "x": [
        run(
            "limit-probe512",
            "grow34",
            "limit",
            disk="512M",
            chunk=512,
            stripe_cache=2048,
            array={"max": 2000},
            note="raid5 3->4 grow, 512 KiB chunks, stripe cache 2048, sync_speed_max 2000",
        ),
        run(
            "limit-probe16k",
            "grow34",
            "limit",
            disk="512M",
            chunk=512,
            stripe_cache=16384,
            array={"max": 3000},
            note="raid5 3->4 grow, 512 KiB chunks, stripe cache 16384, sync_speed_max 3000: "
            "the position moves in jumps of up to 10 % after flat spells of up to 18 s",
        ),
    ],
    "smoke": [
        run(
            "disk-smoke",
            "grow34",
            "disk",
            disk="512M",
            bursts=bursts(1, every=(15, 20), length=(5, 8), first=(5, 6)),
            person=[
                on("burst_start", array_min=20000),
                at(20, global_max=150000),
                at(0.3, stripe_cache=1024),
            ],
            max_s=600,
            note="harness smoke test",
        ),
    ],
}


def vm_env(spec: dict, run_dir: Path, batch: str = "") -> dict:
    env = dict(
        os.environ,
        RUN_DIR=str(run_dir),
        NDISKS=str(spec["ndisks"]),
        DISK_SIZE=spec["disk"],
        TIMEOUT=str(spec["guest"]["max_s"] + 600),
        GUEST_DIR=str(run_dir / "guest"),
    )
    suite = KERNELS.get(batch)
    if suite and suite != "bookworm":
        env["MDVM_BUILD"] = f"/tmp/mdvm-build-{suite}"
    if spec["throttle"]:
        env["DRIVE_OPTS"] = HDD
    if spec["slow_member"]:
        i, factor = spec["slow_member"]
        env["DRIVE_OPTS"] = ""
        for d in range(spec["ndisks"]):
            env[f"DRIVE_OPTS_{d}"] = slow(factor) if d == i else HDD
    return env


RUNS = Path("/tmp/mdvm-runs")


def frozen_file(batch: str) -> str:
    """The file under RECORDINGS that marks the model frozen for this batch."""
    return f"FROZEN-{batch[0]}" if batch in KERNELS else "FROZEN"


def record(spec: dict, batch: str, mdvm: Path, rec: Path) -> Path | None:
    tag = f"{batch}-{spec['cls']}-{spec['name']}"
    run_dir = RUNS / f"real5s-{tag}-{time.strftime('%H%M%S')}"
    (run_dir / "guest").mkdir(parents=True)
    shutil.copy(GUEST / "mdrec.py", run_dir / "guest" / "mdrec.py")
    guest = dict(spec["guest"], name=tag)
    (run_dir / "guest" / "scenario.json").write_text(json.dumps(guest, indent=1))
    (run_dir / "host.json").write_text(
        json.dumps(
            {
                "spec": spec,
                "t0": time.time(),
                "frozen_at_start": (rec / frozen_file(batch)).exists(),
            }
        )
    )
    print(f"[{time.strftime('%T')}] start {tag} ({spec['lane']} lane) -> {run_dir}", flush=True)
    with run_dir.with_suffix(".log").open("w") as out:
        rc = subprocess.run(
            [str(mdvm / "run.sh"), str(GUEST / "record.sh")],
            env=vm_env(spec, run_dir, batch),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    print(f"[{time.strftime('%T')}] end {tag} rc={rc.returncode}", flush=True)
    return collect(run_dir, batch, rec)


def collect(run_dir: Path, batch: str, rec: Path) -> Path | None:
    """Copy a finished VM run's raw CSV, meta and logs to RECORDINGS/<batch>/."""
    host = json.loads((run_dir / "host.json").read_text())
    spec = host["spec"]
    tag = f"{batch}-{spec['cls']}-{spec['name']}"
    raw = run_dir / "out" / f"{tag}.csv"
    meta_file = run_dir / "out" / f"{tag}.meta.json"
    if not meta_file.exists() or not json.loads(meta_file.read_text())["ok"]:
        print(f"  {tag}: failed, see {run_dir}.log and {run_dir}/out/guest.log", flush=True)
        return None
    dest = rec / batch
    dest.mkdir(parents=True, exist_ok=True)
    meta = json.loads(meta_file.read_text())
    meta["host"] = {
        "spec": spec,
        "run_dir": str(run_dir),
        "loadavg_end": os.getloadavg(),
        "wall_s": round((run_dir / "run-summary.txt").stat().st_mtime - host["t0"]),
        "vm_env": {
            k: v
            for k, v in vm_env(spec, run_dir).items()
            if k.startswith(("DRIVE_OPTS", "NDISKS", "DISK_S"))
        },
        "recorded": time.strftime(
            "%Y-%m-%dT%H:%M:%S", time.localtime((run_dir / "run-summary.txt").stat().st_mtime)
        ),
        "frozen_at_start": host["frozen_at_start"],
    }
    (dest / f"{tag}.meta.json").write_text(json.dumps(meta, indent=1))
    shutil.copy(run_dir / "out" / f"{tag}.mdstat.log", dest / f"{tag}.mdstat.log")
    shutil.copy(run_dir / "out" / "guest.log", dest / f"{tag}.guest.log")
    shutil.copy(raw, dest / f"{tag}.csv")  # the CSV last: its presence means "done"
    return dest / f"{tag}.csv"


def running(tag: str) -> list[Path]:
    """Run dirs of this run whose VM has not finished (e.g. left by an interrupted recorder)."""
    return [
        d
        for d in RUNS.glob(f"real5s-{tag}-[0-9]*")
        if d.is_dir() and not (d / "run-summary.txt").exists()
    ]


def thin(raw: Path, out: Path, step: float = STEP_S) -> int:
    """Every `step` s row of a 1 Hz run CSV (on a grid from its first row), the final row, and
    every event moved onto the next kept row."""
    with raw.open(newline="") as f:
        rows = list(csv.DictReader(f))
    kept, carry, grid = [], [], None
    for i, row in enumerate(rows):
        ts = float(row["ts"])
        if row["event"]:
            carry += [e for e in row["event"].split("+") if e not in carry]
        if grid is None or ts >= grid or i == len(rows) - 1:
            grid = (grid if grid is not None else ts) + step
            while grid <= ts:
                grid += step
            kept.append(dict(row, event="+".join(carry)))
            carry = []
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    return len(kept)


def describe(raw: Path) -> str:
    """One INDEX line: fixture, class, action, duration, what bound it, the run's parameters."""
    meta = json.loads(raw.with_suffix(".meta.json").read_text())
    spec = meta["host"]["spec"]
    with raw.open(newline="") as f:
        rows = list(csv.DictReader(f))
    dur = float(rows[-1]["ts"]) - float(rows[0]["ts"])
    feats = [
        w for w in ("steady", "bursts", "changes", "slow", "long") if w in spec["name"].split("-")
    ]
    if spec["guest"].get("bursts") and "bursts" not in feats:
        feats.append("bursts")
    knobs = sorted({e["knob"] for e in meta["events"]})
    return (
        f"{fixture_for(raw).name}\tclass={spec['cls']}\taction={rows[0]['action']}\t"
        f"bound={spec['lane']}\tfeatures={'+'.join(feats)}\tduration_s={dur:.0f}\t"
        f"disks={spec['ndisks']}x{spec['disk']}\tknob_changes={len(meta['events'])}"
        f"{'(' + ','.join(knobs) + ')' if knobs else ''}\tbursts={len(meta['bursts'])}\t"
        f"recorded={meta['host']['recorded']}\tfrozen_before={meta['host']['frozen_at_start']}"
        f"\t{spec['note']}"
    )


def fixture_for(raw: Path) -> Path:
    return FIXTURES / f"real5s-{raw.stem}.csv"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", choices=sorted(BATCHES))
    p.add_argument(
        "--only", nargs="*", help="class-name of runs to record, e.g. grow34-disk-steady"
    )
    p.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    p.add_argument("--lane", choices=("disk", "limit"), help="only this lane's runs, one by one")
    p.add_argument(
        "--mdvm",
        type=Path,
        default=next(
            (
                d / "shared" / "tools" / "mdvm"
                for d in REPO.parents
                if (d / "shared" / "tools").is_dir()
            ),
            None,
        ),
    )
    p.add_argument("--recordings", type=Path, default=Path("/work/recordings"))
    p.add_argument("--convert", action="store_true", help="only rebuild the 5 s fixtures")
    p.add_argument("--list", action="store_true")
    p.add_argument("--adopt", nargs="*", type=Path, help="collect finished run dirs")
    p.add_argument("--index", action="store_true", help="write RECORDINGS/<batch>/INDEX.txt")
    a = p.parse_args(argv)
    if a.list:
        for b, specs in BATCHES.items():
            for s in specs:
                print(
                    f"{b} {s['cls']}-{s['name']:<18} {s['lane']:<5} {s['disk']:>3} x{s['ndisks']}"
                    f"  {s['note']}"
                )
        return 0
    if not a.batch:
        p.error("--batch is needed")
    specs = [
        s
        for s in BATCHES[a.batch]
        if (not a.only or f"{s['cls']}-{s['name']}" in a.only)
        and (not a.lane or s["lane"] == a.lane)
    ]

    def done(s):
        return (a.recordings / a.batch / f"{a.batch}-{s['cls']}-{s['name']}.csv").exists()

    if a.convert:
        for s in specs:
            raw = a.recordings / a.batch / f"{a.batch}-{s['cls']}-{s['name']}.csv"
            if raw.exists():
                print(f"{fixture_for(raw).name}: {thin(raw, fixture_for(raw))} rows")
        return 0
    if a.index:
        lines = [
            describe(a.recordings / a.batch / f"{a.batch}-{s['cls']}-{s['name']}.csv")
            for s in specs
            if done(s)
        ]
        (a.recordings / a.batch / "INDEX.txt").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if a.adopt:
        for d in a.adopt:
            raw = collect(d, a.batch, a.recordings)
            if raw:
                print(f"{fixture_for(raw).name}: {thin(raw, fixture_for(raw))} rows")
        return 0
    todo = []
    for s in specs:
        tag = f"{a.batch}-{s['cls']}-{s['name']}"
        if done(s):
            continue
        if running(tag):
            print(f"{tag}: a VM is still recording it ({running(tag)[0]}): skipped, --adopt it")
            continue
        todo.append(s)
    lanes = {
        "disk": [s for s in todo if s["lane"] == "disk"],
        "limit": [s for s in todo if s["lane"] == "limit"],
    }
    if a.jobs == 1:
        lanes = {"all": lanes["disk"] + lanes["limit"]}
    failed = []

    def worker(queue):
        for s in queue:
            raw = record(s, a.batch, a.mdvm, a.recordings)
            if raw is None:
                failed.append(s["name"])
                continue
            n = thin(raw, fixture_for(raw))
            print(f"  {fixture_for(raw).name}: {n} rows (raw {raw})", flush=True)

    threads = []
    for q in lanes.values():
        t = threading.Thread(target=worker, args=(q,))
        t.start()
        threads.append(t)
        time.sleep(5)
    for t in threads:
        t.join()
    print(f"failed: {failed}" if failed else "all recorded")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
