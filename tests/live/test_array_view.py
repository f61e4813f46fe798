"""app/live/array_view.py: which arrays md has given up on, and how worried the owner should be."""

import shutil
import sqlite3
from pathlib import Path

from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.live import array_view
from app.live.snapshot import ArrayNow
from app.md import mdstat
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, mdstat_text, raid1

BROKEN_FIXTURE = PROJECT_ROOT / "tests" / "fixtures" / "kernel" / "raid5-broken"
# What a 5.4..6.11 kernel prints for the same array: mdstat still says "active".
ACTIVE_BUT_FAILED = (
    "md0 : active raid5 vdc[3](F) vdb[1](F) vda[0]\n"
    "      520192 blocks super 1.2 level 5, 512k chunk, algorithm 2 [3/1] [U__]\n"
)


def view_of(array: mdstat.Array, host: Host) -> dict:
    """The view of an array as the sampler's tick would read it."""
    sysfs = host.read_array_sysfs(array.name) if ARRAY_NAME.fullmatch(array.name) else None
    return array_view.array_view(ArrayNow(array, sysfs))


def test_the_kernel_fixture_is_failed_critical_and_keeps_its_sysfs(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    root = tmp_path / "raid5-broken"
    shutil.copytree(BROKEN_FIXTURE, root)
    host = Host(root / "proc", root / "sys")
    md = array_view.current(host)
    assert array_view.failed_names(md, host) == ["md0"]
    view = view_of(md.arrays[0], host)
    assert (view["state"], view["failed"], view["severity"]) == ("broken", True, "critical")
    assert view["sysfs"]["array_state"] == "broken"
    assert view["sysfs"]["degraded"] == 2


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
    assert [(v["name"], v["failed"], v["severity"]) for v in views] == [
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
    assert {name: v["severity"] for name, v in views.items()} == {
        "md0": "ok",
        "md1": "warning",  # degraded
        "md2": "warning",  # not running
        "md3": "warning",  # a state mdboost does not know
        "md4": "critical",  # failed, even without any sysfs (no /sys/block/md4 here)
    }
    assert array_view.failed_names(parsed, host) == ["md4"]
    assert array_view.is_failed(mdstat_parse.parse(ACTIVE_BUT_FAILED).arrays[0], None) is False
