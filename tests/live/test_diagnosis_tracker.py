"""The tracker on temp /proc + /sys trees whose counters move the way the kernel's do; time is
stepped, never slept."""

from pathlib import Path
from typing import Any

import pytest

from app.diagnosis import text
from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.diagnosis_tracker import Tracker
from tests.diagnosis.moving_box import DISKS, T0, Box, Disk
from tests.diagnosis.readings import tick_with_readings
from tests.kernel_tree import KernelTree, mdstat_text, progress, raid1, raid5


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(KernelTree(tmp_path))


def run(tracker: Tracker, box: Box, seconds: float) -> list[tuple[float, str | None]]:
    """Tick every 5 s for `seconds`; the primary verdict changes seen, as (seconds since T0, verdict)."""
    changes = []
    end = box.now + seconds
    while box.now < end:
        box.step()
        parsed = mdstat_parse.parse(box.tree.read("proc/mdstat"))
        host = tracker.host
        sysfs = {a.name: host.read_array_sysfs(a.name) for a in parsed.arrays}
        _, found = tick_with_readings(
            tracker, box.now, parsed, sysfs, host.read_global_speed_limits()
        )
        changes += [(c.ts - T0, c.verdict) for c in found]
    return changes


def diagnose(tracker: Tracker, box: Box) -> dict[str, Any]:
    parsed = mdstat_parse.parse(box.tree.read("proc/mdstat"))
    host = tracker.host
    sysfs = {a.name: host.read_array_sysfs(a.name) for a in parsed.arrays}
    diagnoses, _ = tick_with_readings(
        tracker, box.now, parsed, sysfs, host.read_global_speed_limits()
    )
    return diagnoses["md2"].shape().model_dump()


def tracker_for(box: Box) -> Tracker:
    return Tracker(Host(box.tree.proc, box.tree.sys))


def test_a_calm_reshape_has_readings_and_no_verdict(box: Box) -> None:
    tracker = tracker_for(box)
    assert run(tracker, box, 120) == []
    view = diagnose(tracker, box)
    assert view["verdict"] is None and view["sentence"] is None
    readings = view["readings"]
    assert readings["window_s"] == 30.0
    assert [m["disk"] for m in readings["members"]] == list(DISKS)  # sda5 -> sda
    sda = readings["members"][0]
    assert (sda["busy"], sda["read_kib_s"], sda["write_kib_s"], sda["wait_ms"]) == (
        0.4,
        6000,
        2000,
        4.0,
    )
    assert readings["threads_cpu"] == {"md2_raid5": 0.3, "md2_reshape": 0.05}
    assert readings["mem_available_kib"] == 4_000_000


def reading(box: Box, kib_s: float) -> None:
    """A program reading the array (md2 in diskstats) at kib_s, spread over the members."""
    box.md2.read_kib_s, box.md2.ios_s = kib_s, kib_s / 128
    for disk in box.disks.values():
        disk.read_kib_s = 6000 + kib_s / len(box.disks)
    box.disks["sda"].busy = 0.93 if kib_s else 0.4


def test_yielding_shows_after_a_minute_with_the_reader(box: Box) -> None:
    box.tree.write("proc/777/comm", "rsync")
    box.tree.write("proc/777/io", "read_bytes: 0\nwrite_bytes: 0\n")
    tracker = tracker_for(box)
    run(tracker, box, 30)
    reading(box, 88000)
    box.speed_kb_s = 12000  # above md's floor (10000 on this box): md yields
    read = 0
    changes = []
    for _ in range(24):
        read += 88000 * 1024 * 5
        box.tree.write("proc/777/io", f"read_bytes: {read}\nwrite_bytes: 0\n")
        changes += run(tracker, box, 5)
    assert [v for _, v in changes] == ["yielding"]
    assert 60 <= changes[0][0] - 30 <= 70  # held a minute from the first tick that saw it
    view = diagnose(tracker, box)
    assert view["sentence"] == (
        "Held back by other I/O on the disks: 65 % of their traffic is reads from rsync "
        "(sda 93 % busy). Boost raises its floor (md stops yielding below it), or pause what "
        "competes."
    )
    yielding = view["verdicts"][0]["numbers"]
    assert yielding["processes"] == [
        {"pid": 777, "comm": "rsync", "read_kib_s": 88000, "write_kib_s": 0}
    ]


def test_held_by_a_local_max(box: Box) -> None:
    box.tree.write("sys/block/md2/md/sync_speed_max", "6500 (local)")
    tracker = tracker_for(box)
    assert run(tracker, box, 65) == [(65.0, "held_by_max")]  # ticks from 5 s: held 60 s at 65
    assert diagnose(tracker, box)["sentence"] == (
        "Held by the speed limit: it runs at 6.1 MB/s, this array's own maximum (6.7 MB/s). "
        "Boost raises it."
    )


def test_one_slow_member(box: Box) -> None:
    box.disks["sdc"] = Disk(wait_ms=60.0, busy=0.99)
    tracker = tracker_for(box)
    changes = run(tracker, box, 90)
    assert [v for _, v in changes] == ["slow_member"]
    numbers = diagnose(tracker, box)["verdicts"][0]["numbers"]
    assert (numbers["disk"], numbers["wait_ms"], numbers["others_wait_ms"]) == ("sdc", 60.0, 4.0)


def test_cpu_bound_parity_thread(box: Box) -> None:
    box.cpu["md2_raid5"] = 0.98
    tracker = tracker_for(box)
    assert [v for _, v in run(tracker, box, 90)] == ["cpu_bound"]
    assert diagnose(tracker, box)["verdicts"][0]["numbers"]["group_thread_cnt"] == 0


def test_stripe_cache_saturated(box: Box) -> None:
    box.tree.write("sys/block/md2/md/stripe_cache_active", "500")  # of 513
    tracker = tracker_for(box)
    assert [v for _, v in run(tracker, box, 90)] == ["stripe_cache"]


def test_a_knob_change_is_judged_afresh_not_left_from_before_it(box: Box) -> None:
    """The cache full at 513 entries; boost writes 16384 (md fills it only by degrees): from
    the tick that reads the new cache on, the old verdict is gone, not fading for a minute."""
    box.tree.write("sys/block/md2/md/stripe_cache_active", "500")  # of 513
    tracker = tracker_for(box)
    assert [v for _, v in run(tracker, box, 90)] == ["stripe_cache"]
    box.tree.write("sys/block/md2/md/stripe_cache_size", "16384")
    box.tree.write("sys/block/md2/md/stripe_cache_active", "4000")
    assert [v for _, v in run(tracker, box, 5)] == [None]
    view = diagnose(tracker, box)
    assert view["verdicts"] == [] and view["readings"]["stripe_cache_size"] == 16384


def test_at_the_disks_limit(box: Box) -> None:
    for disk in box.disks.values():
        disk.busy = 0.97
    tracker = tracker_for(box)
    assert [v for _, v in run(tracker, box, 90)] == ["disks_limit"]
    assert "every member is 97 % busy" in diagnose(tracker, box)["sentence"]


def test_the_disks_limit_beside_a_boost_estimate_never_says_nothing_to_tune(box: Box) -> None:
    """The disks at their limit, and boost's estimate for the run x1.3 (larger requests): the
    advice names boost's gain; beside no gain (1.0) or none offered (boost is on), nothing to
    tune (boost off with no estimate yet: boost may help); and a verdict that says boost raises the pace says so only while boost would."""
    for disk in box.disks.values():
        disk.busy = 0.97
    tracker = tracker_for(box)
    run(tracker, box, 90)
    parsed = mdstat_parse.parse(box.tree.read("proc/mdstat"))
    sysfs = {a.name: tracker.host.read_array_sysfs(a.name) for a in parsed.arrays}
    found, _ = tick_with_readings(
        tracker, box.now, parsed, sysfs, tracker.host.read_global_speed_limits()
    )
    at_the_limit = found["md2"]
    offered = at_the_limit.beside_boost(1.3).primary
    assert offered is not None and "Nothing to tune" not in offered.sentence
    assert "Boost could still make them about ×1.3 faster" in offered.sentence
    for no_gain in (1.0, 1.1, None):
        primary = at_the_limit.beside_boost(no_gain).primary
        assert primary is not None and "Nothing to tune" in primary.sentence, no_gain
    # Boost off and no estimate yet (the pace is not known): the page offers boost, and the
    # advice must not say there is nothing to tune beside it.
    unknown = at_the_limit.beside_boost(None, boost_off=True).primary
    assert unknown is not None and "Nothing to tune" not in unknown.sentence
    assert unknown.sentence.endswith("Its gain here is estimated once the pace is known.")
    assert text.todo("held_by_max", {"boost_ratio": 1.05}).startswith("Boost is not expected")
    assert text.todo("held_by_max", {"boost_ratio": 5.0}) == "Boost raises it."


def bursts(box: Box, tracker: Tracker, on_s: float, off_s: float, total_s: float) -> list[str]:
    changes: list[tuple[float, str | None]] = []
    while box.now < T0 + total_s:
        reading(box, 88000)
        changes += run(tracker, box, on_s)
        reading(box, 0)
        changes += run(tracker, box, off_s)
    return [str(verdict) for _, verdict in changes]


def test_a_short_burst_now_and_then_shows_nothing(box: Box) -> None:
    assert bursts(box, tracker_for(box), 15, 165, 1800) == []  # 15 s every 3 minutes


def test_bursts_close_together_show_once_and_stay(box: Box) -> None:
    assert bursts(box, tracker_for(box), 15, 15, 1800) == ["yielding"]  # half the time


def test_a_thread_that_restarts_is_found_again_once_a_minute(box: Box) -> None:
    tracker = tracker_for(box)
    run(tracker, box, 20)
    box.pids["md2_reshape"] = 555  # md restarted the reshape thread
    (box.tree.proc / "402" / "stat").unlink()
    run(tracker, box, 30)
    assert "md2_reshape" not in diagnose(tracker, box)["readings"]["threads_cpu"]
    run(tracker, box, 60)
    assert set(diagnose(tracker, box)["readings"]["threads_cpu"]) == {"md2_raid5", "md2_reshape"}


def test_an_idle_box_reads_nothing_and_forgets_ended_runs(box: Box) -> None:
    tracker = tracker_for(box)
    run(tracker, box, 30)
    box.tree.mdstat(mdstat_text(raid5(), raid1()))
    (box.tree.proc / "diskstats").unlink()  # an idle tick must not even look
    assert run(tracker, box, 10) == []
    assert tracker.arrays == {}
    box.tree.mdstat(mdstat_text(raid5(progress=progress("check", 10, 1000)), raid1()))
    box.write()
    assert (
        "md2"
        in tick_with_readings(
            tracker, box.now, mdstat_parse.parse(box.tree.read("proc/mdstat")), {}, (1000, 200000)
        )[0]
    )
