"""app/live/array_view.py: which arrays md has given up on, and how worried the owner should be."""

import shutil
import sqlite3
from pathlib import Path

from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.live import array_view
from app.md import failure, mdstat
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, mdstat_text, raid1
from tests.present import array_now

BROKEN_FIXTURE = PROJECT_ROOT / "tests" / "fixtures" / "kernel" / "raid5-broken"
# What a 5.4..6.11 kernel prints for the same array: mdstat still says "active".
ACTIVE_BUT_FAILED = (
    "md0 : active raid5 vdc[3](F) vdb[1](F) vda[0]\n"
    "      520192 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/1] [U__]\n"
)


def view_of(array: mdstat.Array, host: Host) -> dict:
    """The view of an array as the sampler's tick would read it."""
    sysfs = host.read_array_sysfs(array.name) if ARRAY_NAME.fullmatch(array.name) else None
    return array_view.array_view(array_now(array, sysfs))


def test_the_kernel_fixture_is_failed_critical_and_keeps_its_sysfs(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    root = tmp_path / "raid5-broken"
    shutil.copytree(BROKEN_FIXTURE, root)
    host = Host(root / "proc", root / "sys")
    md = array_view.current(host)
    assert array_view.failed_names(md, host) == ["md0"]
    view = view_of(md.arrays[0], host)
    assert (view.state, view.failed, view.severity) == ("broken", True, "critical")
    assert view.sysfs is not None
    assert (view.sysfs.array_state, view.sysfs.degraded) == ("broken", 2)


def test_array_state_broken_marks_a_failed_array_where_mdstat_still_says_active(
    tree: KernelTree, conn: sqlite3.Connection
) -> None:
    tree.mdstat(mdstat_text(ACTIVE_BUT_FAILED, raid1("md1")))
    tree.md("md0", array_state="broken", degraded="2")
    tree.md("md1", array_state="clean")
    host = Host(tree.proc, tree.sys)
    md = array_view.current(host)
    assert array_view.failed_names(md, host) == ["md0"]
    views = [view_of(a, host) for a in md.arrays]
    assert [(v.name, v.failed, v.severity) for v in views] == [
        ("md0", True, "critical"),
        ("md1", False, "ok"),
    ]


def test_severity_of_each_kind_of_array(tree: KernelTree, conn: sqlite3.Connection) -> None:
    tree.mdstat(
        mdstat_text(
            raid1("md0"),
            "md1 : active raid1 sdb2[1](F) sda2[0]\n      2097088 blocks [2/1] [U_]\n",
            "md2 : inactive sdc3[0](S)\n      976630464 blocks super 1.2\n",
            "md3 : frozen-ish raid1 sdd1[1] sdc1[0]\n      2490176 blocks [2/2] [UU]\n",
            "md4 : broken raid0 sde1[0]\n      10 blocks 64k chunks\n",
        )
    )
    host = Host(tree.proc, tree.sys)
    parsed = array_view.current(host)
    views = {a.name: view_of(a, host) for a in parsed.arrays}
    assert {name: v.severity for name, v in views.items()} == {
        "md0": "ok",
        "md1": "warning",  # degraded
        "md2": "warning",  # not running
        "md3": "warning",  # a state mdboost does not know
        "md4": "critical",  # failed, even without any sysfs (no /sys/block/md4 here)
    }
    assert array_view.failed_names(parsed, host) == ["md4"]


def test_too_few_working_members_is_failed_whatever_sysfs_says() -> None:
    """5.10 prints [3/1] [U__] under "active"; 6.1 and 6.12 say write-pending in sysfs
    for seconds (the member faulty,blocked); sysfs may be unreadable. The counts decide then."""
    array = mdstat_parse.parse(ACTIVE_BUT_FAILED).arrays[0]
    for array_state in (None, "write-pending", "clean", "active"):
        assert failure.is_failed(array, array_state) is True, array_state


def test_one_missing_member_of_a_raid5_or_two_of_a_raid6_is_degraded_not_failed() -> None:
    def first(text: str) -> mdstat.Array:
        return mdstat_parse.parse(text).arrays[0]

    raid5 = first(
        "md0 : active raid5 vdb[1] vda[0]\n      10 blocks level 5, 64k chunk, algorithm 2 [3/2] [UU_]\n"
    )
    raid6 = first(
        "md0 : active raid6 vdb[1] vda[0]\n      10 blocks level 6, 64k chunk, algorithm 2 [4/2] [UU__]\n"
    )
    raid6_gone = first(
        "md0 : active raid6 vda[0]\n      10 blocks level 6, 64k chunk, algorithm 2 [4/1] [U___]\n"
    )
    raid1_last = first("md0 : active raid1 vda[0]\n      10 blocks [2/1] [U_]\n")
    raid1_none = first("md0 : active raid1 vda[0](F)\n      10 blocks [2/0] [__]\n")
    assert [failure.is_failed(a, "write-pending") for a in (raid5, raid6, raid1_last)] == [
        False
    ] * 3
    assert failure.is_failed(raid6_gone, "clean") and failure.is_failed(raid1_none, None)


def test_sysfs_degraded_counts_where_mdstat_shows_no_counts() -> None:
    array = mdstat.Array(
        "md0", "active", False, False, "raid5", "1.2", 10, 64, (), 3, None, None, None, None
    )
    assert failure.is_failed(array, "write-pending", degraded=2) is True
    assert failure.is_failed(array, "write-pending", degraded=1) is False


def test_a_faulty_member_fails_a_raid0_or_linear() -> None:
    raid0 = mdstat_parse.parse(
        "md0 : active raid0 vdb[1](F) vda[0]\n      10 blocks 64k chunks\n"
    ).arrays[0]
    whole = mdstat_parse.parse(
        "md0 : active raid0 vdb[1] vda[0]\n      10 blocks 64k chunks\n"
    ).arrays[0]
    assert failure.is_failed(raid0, None) and not failure.is_failed(whole, "clean")
    assert failure.is_failed(whole, "broken")  # its member disk vanished: sysfs knows after I/O


def raid10(copies: str, status: str) -> mdstat.Array:
    line = f"      10 blocks super 1.2 512K chunks {copies} [{len(status)}/{status.count('U')}]"
    return mdstat_parse.parse(f"md0 : active raid10 vdb[1] vda[0]\n{line} [{status}]\n").arrays[0]


def test_a_raid10_fails_when_one_copy_set_is_gone_whatever_the_count() -> None:
    # md's _enough(): near-copies pair neighbouring slots; far- and offset-copies shift by one.
    # Two of four members gone is harmless or fatal depending on which two.
    assert [
        failure.is_failed(raid10("2 near-copies", status), "write-pending")
        for status in ("_U_U", "U__U", "__UU", "UU__", "U_U_")
    ] == [False, False, True, True, False]
    assert [
        failure.is_failed(raid10(copies, "_U_U"), None)
        for copies in ("2 far-copies", "2 offset-copies")
    ] == [False, False]
    assert failure.is_failed(raid10("2 far-copies", "U__U"), None)
    assert failure.is_failed(raid10("2 far-copies", "_UU_"), None)  # the set wrapping 3 -> 0
    # Three members, two near copies: sets (0,1), (2,0), (1,2); any two gone is fatal.
    assert [
        failure.is_failed(raid10("2 near-copies", status), None)
        for status in ("U__", "_U_", "UU_", "_UU")
    ] == [True, True, False, False]
    # Three copies on four members survive any two missing.
    assert not failure.is_failed(raid10("3 near-copies", "__UU"), None)


def test_a_raid10_without_its_copies_is_judged_by_the_word_only() -> None:
    wrapped = mdstat_parse.parse(
        "md0 : active raid10 vdb[1] vda[0]\n      10 blocks super 1.2 [4/2] [__UU]\n"
    ).arrays[0]
    assert wrapped.near_copies is None and not failure.is_failed(wrapped, "write-pending")
    assert failure.is_failed(wrapped, "broken")


def test_failed_names_reads_sysfs_degraded_too(tree: KernelTree) -> None:
    tree.mdstat(mdstat_text(ACTIVE_BUT_FAILED, raid1("md1")))
    tree.md("md0", array_state="write-pending", degraded="2")
    tree.md("md1", array_state="clean", degraded="0")
    host = Host(tree.proc, tree.sys)
    assert array_view.failed_names(array_view.current(host), host) == ["md0"]
