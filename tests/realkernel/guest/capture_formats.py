"""Guest scenario: walk md through every state we can provoke and save each as a fixture tree.

Runs as root inside the VM. Each progress state is captured while the global speed limit holds
the operation at a crawl (so the kernel prints a steady `speed=` line), then the limit is lifted
and the operation is waited out or the array stopped. Also records how the kernel answers
writes that mdboost's tuning must survive (rejected values, mdadm's own stripe cache change).
"""

import platform
import subprocess
from pathlib import Path

from mdguest import (
    DISKS,
    main,
    md_path,
    mdstat,
    mdstat_block,
    read,
    record,
    say,
    set_speed_limits,
    sh,
    snapshot,
    stop_all,
    wait_for,
    wait_idle,
    wait_progress_line,
    wipe,
    write_attr,
)

CRAWL = (1000, 1000)  # KiB/s: slow enough to capture a progress line at leisure
FREE = (1000, 200000)  # the kernel's defaults


def crawl() -> None:
    set_speed_limits(*CRAWL)


def free() -> None:
    set_speed_limits(*FREE)


def create(md: str, level: str, devices: list[str], *extra: str) -> None:
    wipe(devices)
    sh(
        "mdadm",
        "--create",
        f"/dev/{md}",
        "--run",
        "--metadata=1.2",
        f"--level={level}",
        f"--raid-devices={len(devices)}",
        *extra,
        *devices,
    )


def flagged(md: str, text: str) -> bool:
    return text in mdstat_block(md)


def raid5() -> None:
    vda, vdb, vdc, vdd = DISKS[:4]
    crawl()
    create("md0", "5", [vda, vdb, vdc])  # mdadm builds RAID5 degraded + spare: a recovery
    wait_progress_line("md0", "recovery")
    snapshot("raid5-create-recovery", ["md0"])
    free()
    wait_idle("md0")
    snapshot("raid5-clean", ["md0"])

    crawl()
    (md_path("md0", "sync_action")).write_text("check\n")
    wait_progress_line("md0", "check")
    snapshot("raid5-check", ["md0"])
    free()
    wait_idle("md0")

    sh("mdadm", "/dev/md0", "--fail", vdc)
    wait_for(lambda: flagged("md0", "(F)"), "vdc to show (F)")
    snapshot("raid5-faulty-member", ["md0"])
    sh("mdadm", "/dev/md0", "--remove", vdc)
    wait_for(lambda: "vdc" not in mdstat_block("md0"), "vdc to leave md0")
    snapshot("raid5-degraded", ["md0"])

    crawl()
    wipe([vdc])
    sh("mdadm", "/dev/md0", "--add", vdc)
    wait_progress_line("md0", "recovery")
    snapshot("raid5-recovery-readd", ["md0"])
    free()
    wait_idle("md0")

    sh("mdadm", "/dev/md0", "--add", vdd)
    wait_for(lambda: flagged("md0", "(S)"), "vdd to show as spare (S)")
    snapshot("raid5-spare", ["md0"])

    crawl()
    cache_before = read(md_path("md0", "stripe_cache_size"))
    grown = sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4", check=False)
    if grown.returncode != 0:
        sh("mdadm", "--grow", "/dev/md0", "--raid-devices=4", "--backup-file=/tmp/md0-grow.bak")
    cache_after = read(md_path("md0", "stripe_cache_size"))
    record("stripe_cache_size_around_grow", {"before": cache_before, "after": cache_after})
    wait_progress_line("md0", "reshape")
    snapshot("raid5-reshape", ["md0"])
    probe_writes("md0")
    free()
    wait_idle("md0")
    snapshot("raid5-reshaped", ["md0"])
    record("stripe_cache_size=17 when idle", write_attr(md_path("md0", "stripe_cache_size"), "17"))
    stop_all()

    crawl()
    create("md0", "5", [vda, vdb, vdc], "--force")  # --force: a real resync, no spare trick
    wait_progress_line("md0", "resync")
    snapshot("raid5-force-resync", ["md0"])
    free()
    stop_all()


def probe_writes(md: str) -> None:
    """Record what the kernel does with values mdboost must validate or survive (during reshape)."""
    answers: dict[str, str] = {}
    cache = md_path(md, "stripe_cache_size")
    original = read(cache)
    # Only values the kernel must refuse, or raise the cache: shrinking it below what the
    # reshape needs (mdadm set 513 for 512 KiB chunks) stalled the reshape for minutes.
    for value in ("16", "32768", "32769", "0", "-1", "abc"):
        answers[f"stripe_cache_size={value}"] = write_attr(cache, value) + f" -> {read(cache)}"
    write_attr(cache, original)
    for attr, value in (
        ("sync_speed_min", "-5"),
        ("sync_speed_max", "abc"),
        ("sync_action", "bogus"),
    ):
        answers[f"{attr}={value}"] = (
            write_attr(md_path(md, attr), value) + f" -> {read(md_path(md, attr))}"
        )
    for attr, value in (("sync_speed_max", "50000"), ("sync_speed_max", "system")):
        answers[f"{attr}={value}"] = (
            write_attr(md_path(md, attr), value) + f" -> {read(md_path(md, attr))}"
        )
    limit = Path("/proc/sys/dev/raid/speed_limit_max")
    before = read(limit)
    for value in ("-1", "abc", "99999999999"):
        answers[f"speed_limit_max={value}"] = write_attr(limit, value) + f" -> {read(limit)}"
    limit.write_text(f"{before}\n")
    ra = Path(f"/sys/block/{md}/queue/read_ahead_kb")
    before = read(ra)
    for value in ("-1", "32768", "abc"):
        answers[f"read_ahead_kb={value}"] = write_attr(ra, value) + f" -> {read(ra)}"
    ra.write_text(f"{before}\n")
    answers["group_thread_cnt=9999"] = write_attr(md_path(md, "group_thread_cnt"), "9999")
    record("kernel_write_answers_during_reshape", answers)


def raid6() -> None:
    vda, vdb, vdc, vdd = DISKS[:4]
    crawl()
    create("md6", "6", [vda, vdb, vdc, vdd])
    wait_progress_line("md6", "resync")
    snapshot("raid6-resync", ["md6"])
    free()
    wait_idle("md6")
    sh("mdadm", "/dev/md6", "--fail", vdc, vdd)
    wait_for(lambda: mdstat_block("md6").count("(F)") == 2, "two (F) members")
    sh("mdadm", "/dev/md6", "--remove", vdc, vdd)
    wait_for(lambda: "[4/2]" in mdstat_block("md6"), "md6 at [4/2]")
    snapshot("raid6-two-missing", ["md6"])
    crawl()
    wipe([vdc, vdd])
    sh("mdadm", "/dev/md6", "--add", vdc, vdd)
    wait_progress_line("md6", "recovery")
    snapshot("raid6-recovery-two", ["md6"])
    free()
    stop_all()


def raid1_bitmap() -> None:
    vda, vdb = DISKS[:2]
    crawl()
    create("md1", "1", [vda, vdb], "--bitmap=internal")
    wait_progress_line("md1", "resync")
    snapshot("raid1-bitmap-resync", ["md1"])
    free()
    wait_idle("md1")
    snapshot("raid1-bitmap-clean", ["md1"])
    sh("mdadm", "--readonly", "/dev/md1")
    wait_for(lambda: "(read-only)" in mdstat_block("md1"), "md1 (read-only)")
    snapshot("raid1-read-only", ["md1"])
    stop_all()


def raid10_raid0_linear_raid4() -> None:
    vda, vdb, vdc, vdd, vde, vdf = DISKS[:6]
    crawl()
    create("md10", "10", [vda, vdb, vdc, vdd])
    create("md20", "0", [vde, vdf])
    wait_progress_line("md10", "resync")
    snapshot("raid10-resync-and-raid0", ["md10", "md20"])
    stop_all()
    # Linux 6.12 has no linear personality (its module was removed; mdstat lists none).
    linear = "[linear]" in mdstat().splitlines()[0]
    if linear:
        create("md30", "linear", [vda, vdb])
    create("md4", "4", [vdc, vdd, vde])
    wait_progress_line("md4", "recovery")
    snapshot(
        "linear-and-raid4-recovery" if linear else "raid4-recovery", ["md30", "md4"][not linear :]
    )
    free()
    stop_all()


def delayed_pending_inactive() -> None:
    """Two arrays on partitions of the same disks: md runs one resync, the other is DELAYED."""
    vda, vdb = DISKS[:2]
    wipe([vda, vdb])
    for disk in (vda, vdb):
        subprocess.run(
            ["sfdisk", "-q", disk], input="label: gpt\n,96M\n,96M\n", text=True, check=True
        )
    parts = [f"{vda}1", f"{vdb}1", f"{vda}2", f"{vdb}2"]
    wait_for(lambda: all(Path(p).exists() for p in parts), "partition nodes")
    crawl()
    create("md1", "1", parts[:2])
    create("md2", "1", parts[2:])
    wait_for(lambda: "resync=DELAYED" in mdstat_block("md2"), "md2 resync=DELAYED")
    wait_progress_line("md1", "resync")
    snapshot("raid1-resync-and-delayed", ["md1", "md2"])
    stop_all()  # both stopped before their resync finished: each still needs one

    Path("/sys/module/md_mod/parameters/start_ro").write_text("1\n")
    sh("mdadm", "--assemble", "/dev/md1", *parts[:2])
    sh("mdadm", "--assemble", "--readonly", "/dev/md2", *parts[2:])
    wait_for(lambda: "PENDING" in Path("/proc/mdstat").read_text(), "resync=PENDING")
    snapshot("raid1-pending-auto-read-only-and-read-only", ["md1", "md2"])
    Path("/sys/module/md_mod/parameters/start_ro").write_text("0\n")
    stop_all()

    # One member of two: mdadm --assemble would stop the array again; --incremental leaves it
    # inactive, as a NAS shows an array whose disks are still being found.
    conf = Path("/tmp/incremental.conf")
    conf.write_text("DEVICE partitions\nAUTO +all\n")
    sh("mdadm", "--incremental", f"--config={conf}", parts[0])
    wait_for(lambda: "md1 : inactive" in Path("/proc/mdstat").read_text(), "md1 inactive")
    snapshot("raid1-inactive", ["md1"])
    free()
    stop_all()


def md_attributes(md: str) -> list[str]:
    return sorted(
        p.name
        for p in Path(f"/sys/block/{md}/md").iterdir()
        if not p.name.startswith(("dev-", "rd"))
    )


def member_states(md: str) -> dict[str, str]:
    return {p.name: read(p / "state") for p in sorted(Path(f"/sys/block/{md}/md").glob("dev-*"))}


def touch_array(md: str) -> str:
    """One direct read and write of the array's first MiB (what makes md notice a lost member);
    returns how the read went."""
    read_back = subprocess.run(
        ["dd", f"if=/dev/{md}", "of=/dev/null", "bs=1M", "count=2", "iflag=direct"],
        capture_output=True,
        text=True,
    )
    subprocess.run(
        ["dd", "if=/dev/zero", f"of=/dev/{md}", "bs=1M", "count=2", "oflag=direct"],
        capture_output=True,
    )
    return "ok" if read_back.returncode == 0 else read_back.stderr.strip().splitlines()[-1]


def until_broken(md: str) -> dict[str, str]:
    """Touch the array, wait for sysfs to say broken; what md shows then."""
    io = touch_array(md)
    wait_for(lambda: read(md_path(md, "array_state")) == "broken", f"{md} array_state broken")
    return {
        "io": io,
        "array_state_after_io": read(md_path(md, "array_state")),
        "mdstat_after_io": mdstat_block(md),
    }


def failed_arrays() -> None:
    """A RAID5 that lost two of three members, and a RAID0 whose member disk was unplugged (PCI
    hot-unplug in the guest): what each kernel shows at once and after the next I/O.
    Last in the scenario: the unplugged disk stays gone for this boot."""
    vda, vdb, vdc = DISKS[:3]
    vde, vdf = DISKS[4:6]
    free()
    create("md0", "5", [vda, vdb, vdc], "--assume-clean")
    record("raid5_md_attributes", md_attributes("md0"))
    record("personalities", mdstat().splitlines()[0])
    sh("mdadm", "/dev/md0", "--fail", vdb)
    second = sh("mdadm", "/dev/md0", "--fail", vdc, check=False)
    facts = {
        "second_fail_rc": second.returncode,
        "array_state_at_once": read(md_path("md0", "array_state")),
        "members_at_once": member_states("md0"),
        "mdstat_at_once": mdstat_block("md0"),
    }
    facts |= until_broken("md0")
    record("raid5_two_failed", facts)
    snapshot("raid5-two-failed", ["md0"])
    stop_all()

    create("md20", "0", [vde, vdf])
    fail_raid0 = sh("mdadm", "/dev/md20", "--fail", vdf, check=False)
    facts = {
        "mdadm_fail_rc": fail_raid0.returncode,
        "array_state_after_fail": read(md_path("md20", "array_state")),
    }
    stop_all()  # whatever --fail did, start again from a whole raid0
    create("md20", "0", [vde, vdf])
    pci = Path(f"/sys/block/{Path(vdf).name}/device").resolve().parent
    Path(pci / "remove").write_text("1\n")
    wait_for(lambda: not Path(f"/sys/block/{Path(vdf).name}").exists(), f"{vdf} to go away")
    facts["array_state_unplugged"] = read(md_path("md20", "array_state"))
    facts |= until_broken("md20")
    record("raid0_member_unplugged", facts)
    snapshot("raid0-member-unplugged", ["md20"])
    stop_all()


def scenario() -> None:
    say(f"kernel {platform.release()}; disks {DISKS}")
    record("kernel", platform.release())
    record("mdadm", sh("mdadm", "--version").stderr.strip())
    record(
        "defaults",
        {
            "speed_limit_min": read("/proc/sys/dev/raid/speed_limit_min"),
            "speed_limit_max": read("/proc/sys/dev/raid/speed_limit_max"),
        },
    )
    raid5()
    raid6()
    raid1_bitmap()
    raid10_raid0_linear_raid4()
    delayed_pending_inactive()
    failed_arrays()


if __name__ == "__main__":
    main(scenario)
