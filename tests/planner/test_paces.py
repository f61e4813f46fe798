"""Paces from this box's history: what each figure rests on, and how sure it is."""

import pytest

from app.planner.paces import (
    DAY_S,
    KERNEL_GROWS,
    MAX_REQUEST_KIB,
    SEEK_RANGE,
    SEEK_REQUESTS_S,
    Boost,
    Geometry,
    History,
    MeasuredPace,
    capped,
    grow_paces,
    spread,
    sync_pace,
)
from tests.planner.test_change import NOW, TB_KIB, ds415, plan

DISK = 2 * TB_KIB
CHECK = MeasuredPace(150_000.0, "the check of md2", NOW - 3 * DAY_S, DISK)


def test_a_recent_check_gives_the_rebuild_pace_and_says_so():
    pace = sync_pace(History(sync=CHECK), DISK, NOW)
    assert pace.source == "measured"
    assert pace.kib_s == 150_000.0
    # 1790000000 is 21 Sep 2026 (UTC), three days later; 150000 KiB/s is 154 MB/s
    assert pace.why == "from the check of md2 on 18 Sep 2026: 154 MB/s a disk"
    assert pace.low_kib_s < pace.kib_s < pace.high_kib_s


def test_the_range_widens_when_the_history_is_old_or_thin():
    fresh = spread(CHECK, DISK, NOW)
    old = spread(MeasuredPace(150_000.0, "x", NOW - 200 * DAY_S, DISK), DISK, NOW)
    thin = spread(MeasuredPace(150_000.0, "x", NOW - 3 * DAY_S, DISK // 100), DISK, NOW)
    assert fresh < old and fresh < thin
    assert fresh == pytest.approx(0.16, abs=0.01)


def test_a_grow_uses_the_last_grow_before_and_after_its_knee():
    before = MeasuredPace(20_000.0, "the grow of md2", NOW - DAY_S, DISK // 2)
    after = MeasuredPace(90_000.0, "the grow of md2", NOW - DAY_S, DISK // 4)
    head, tail = grow_paces(History(sync=CHECK, grow_before=before, grow_after=after), DISK, NOW)
    assert (head.kib_s, head.source, tail.kib_s, tail.source) == (
        20_000.0,
        "measured",
        90_000.0,
        "measured",
    )
    assert "before the knee" in head.why and "after the knee" in tail.why
    # Without a past grow: md's physics from the check's pace, and it says so.
    head, tail = grow_paces(History(sync=CHECK), DISK, NOW)
    assert head.source == "physics" and "seek-bound on rotating disks" in head.why
    assert "from the check of md2" in head.why
    assert head.kib_s < tail.kib_s == CHECK.kib_s * KERNEL_GROWS["6.1"].after_knee[0]


def test_before_its_knee_a_grow_on_spinning_disks_goes_at_their_seeks_not_their_streaming():
    """A member alternates reading the old layout with writing the new: about 120 requests/s a
    7200 rpm disk, whatever it streams, each carrying what the kernel merges into it. A 3 -> 4
    grow of 64 KiB chunks on 6.1: 120 / (1.5 / read + 1 / write) KiB/s."""
    six_one = KERNEL_GROWS["6.1"]
    three_to_four = Geometry(2, 3, 64)
    head, _ = grow_paces(History(sync=CHECK, kernel="6.1"), DISK, NOW, three_to_four)
    assert head.kib_s == pytest.approx(
        SEEK_REQUESTS_S / (1.5 / six_one.read_kib + 1 / six_one.write_kib)
    )
    # The range: the slowest disks with the smallest requests seen, the fastest with the largest.
    (small_read, small_write), (large_read, large_write) = six_one.smallest, six_one.largest
    assert (head.low_kib_s, head.high_kib_s) == pytest.approx(
        (
            SEEK_REQUESTS_S * SEEK_RANGE[0] / (1.5 / small_read + 1 / small_write),
            SEEK_REQUESTS_S * SEEK_RANGE[1] / (1.5 / large_read + 1 / large_write),
        )
    )
    assert "Linux 6.1.0-56" in head.why
    # Larger chunks merge into larger requests, up to what the disk takes in one.
    big = grow_paces(History(sync=CHECK, kernel="6.1"), DISK, NOW, Geometry(2, 3, 512))[0]
    assert big.kib_s == pytest.approx(8 * head.kib_s)
    huge = Geometry(2, 3, 4096).requests_per_kib(six_one.read_kib, six_one.write_kib)
    assert huge == pytest.approx(1.5 / MAX_REQUEST_KIB + 1 / MAX_REQUEST_KIB)
    # A check at 150 MB/s and a check at 30 MB/s plan the same grow: seeks bind both.
    slow_check = MeasuredPace(30_000.0, "the check of md2", NOW - 3 * DAY_S, DISK)
    slow = grow_paces(History(sync=slow_check, kernel="6.1"), DISK, NOW, three_to_four)[0]
    assert slow.kib_s == head.kib_s
    # ... until the check's pace is the lower: a member reads 1.5 x the progress, and md read
    # it no faster in the check (the disks' streaming, or md's own thread, held it there).
    crawl = MeasuredPace(3_000.0, "the check of md2", NOW - 3 * DAY_S, DISK)
    crawling = grow_paces(History(sync=crawl, kernel="6.1"), DISK, NOW, three_to_four)[0]
    assert crawling.kib_s == pytest.approx(2_000.0)
    assert "the check's pace over 1.5, what it reads (below the seek bound)" in crawling.why


def test_the_seek_bound_is_the_kernel_generations_own():
    """5.10 moves several times 6.1's bytes a request the disk serves, 6.12 its own: on the same
    disks each generation grows at its own pace. A kernel without
    figures of its own plans with 6.1's, in a range as wide as every measured kernel's, and says
    so."""
    fast_check = MeasuredPace(1e6, "the check of md2", NOW - 3 * DAY_S, DISK)
    three_to_four = Geometry(2, 3, 64)

    def head(kernel: str | None):
        return grow_paces(History(sync=fast_check, kernel=kernel), DISK, NOW, three_to_four)[0]

    old, now, new, unknown = head("5.10"), head("6.1"), head("6.12"), head("4.4")
    assert old.kib_s > 2 * now.kib_s and new.kib_s != now.kib_s
    assert "Linux 5.10.0-32" in old.why and "Linux 6.12" in new.why
    assert unknown.kib_s == now.kib_s
    assert "Linux 4.4 not measured: 6.1's" in unknown.why
    assert "the kernel unknown" in head(None).why
    # The unmeasured range holds every measured generation's likely pace.
    for measured in (old, now, new):
        assert unknown.low_kib_s <= measured.kib_s <= unknown.high_kib_s

    # Past the knee md only writes: 6.1 ran faster than its check, 6.12 (7 KiB writes) slower.
    def tail(kernel: str | None):
        return grow_paces(History(sync=CHECK, kernel=kernel), DISK, NOW, three_to_four)[1]

    assert tail("6.12").kib_s < CHECK.kib_s < tail("6.1").kib_s
    assert "0.5x a sync's pace on this kernel" in tail("6.12").why


def test_ssds_grow_at_their_streaming_pace():
    history = History(sync=CHECK, rotational=False)
    head, tail = grow_paces(history, DISK, NOW, Geometry(2, 3, 64))
    assert head.kib_s == pytest.approx(CHECK.kib_s / 2.5)
    assert "seek" not in head.why
    assert tail.kib_s == CHECK.kib_s * KERNEL_GROWS["6.1"].after_knee[0]


def test_md_never_goes_past_its_max_limit():
    pace = capped(sync_pace(History(sync=CHECK), DISK, NOW), 50_000.0)
    assert pace.kib_s == pace.high_kib_s == 50_000.0
    assert "held to the max speed limit" in pace.why


def test_a_measured_boost_and_the_history_drive_the_plan():
    slow = plan(ds415(), "add", 4, history=History(sync=CHECK))
    measured = Boost(2.0, 1.8, 2.2, "measured", "measured on md2")
    fast = plan(ds415(), "add", 4, history=History(sync=CHECK, boost_grow=measured))
    step, boosted = slow.steps[0], fast.steps[0]
    assert step.source == "physics"
    assert "from the check of md2" in step.why
    assert boosted.boosted.seconds == pytest.approx(boosted.duration.seconds / 2)
    assert boosted.boost_why == "measured on md2"
    assert slow.total is not None and fast.boosted_total is not None
    assert fast.boosted_total.seconds < slow.total.seconds


def test_a_grow_seen_only_before_its_knee_speeds_up_past_it():
    before = MeasuredPace(20_000.0, "the grow of md2", NOW, DISK // 10)
    history = History(sync=CHECK, grow_before=before, knee_speedup=(5.0, 2.0, 12.0))
    head, tail = grow_paces(history, DISK, NOW)
    assert head.source == "measured" and tail.source == "physics"
    assert tail.kib_s == 100_000.0
    assert tail.why.startswith("x5 the pace before it (md only writes past the knee)")
    assert tail.low_kib_s == pytest.approx(head.low_kib_s * 2)


def test_a_sync_held_by_its_max_limit_is_a_floor_not_the_disks_pace():
    held = MeasuredPace(5_000.0, "the check of md2", NOW, DISK, held_by_max=True)
    pace = sync_pace(History(sync=held), DISK, NOW)
    assert pace.source == "assumed" and pace.kib_s > held.kib_s
    assert "ran at its max speed limit (5 MB/s), so the disks can do more" in pace.why
    fast = MeasuredPace(900_000.0, "the check of md2", NOW, DISK, held_by_max=True)
    assert sync_pace(History(sync=fast), DISK, NOW).kib_s == 900_000.0
