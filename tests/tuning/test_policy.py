"""The tick's policy: automatic reverts, and arrays or disks that vanish under a session."""

import logging
import shutil

import pytest

from app.tuning.session.apply import TuningFailed
from tests.kernel_tree import KernelTree, mdstat_text, raid1
from tests.tuning.tuners import make_tuner, status, user_preset

GONE_LINE = "the array or disk is gone"
WIDE = (
    'summary = "an array knob and a global one"\n'
    '[knobs.stripe_cache_size]\nvalue = 4096\nreason = "x"\n'
    '[knobs.speed_limit_min]\nvalue = 50000\nreason = "x"\n'
)


def stop_md2(tree: KernelTree) -> None:
    """mdadm --stop /dev/md2: it leaves /proc/mdstat and /sys/block."""
    tree.mdstat(mdstat_text(raid1()))
    shutil.rmtree(tree.sys / "block" / "md2")


def ops(tuner) -> list[tuple[str, str]]:
    return [tuple(r) for r in tuner.conn.execute("SELECT kind, state FROM tuning_ops ORDER BY id")]


def test_a_stopped_array_counts_as_restored_once_and_the_session_closes(box, tmp_path, caplog):
    user_preset(tmp_path, "wide", WIDE)
    tuner = make_tuner(box, tmp_path)
    tuner.apply("wide")
    stop_md2(box)
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            tuner.on_tick()
    assert status(tuner)["active"] is False
    assert box.read("proc/sys/dev/raid/speed_limit_min") == "10000\n"  # the rest is put back
    assert ops(tuner) == [("apply", "done"), ("revert", "done")]
    assert [r.message for r in caplog.records if GONE_LINE in r.message] == [
        f"stripe_cache_size@md2: {GONE_LINE} (stopped or removed); counted as restored"
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    reason = tuner.conn.execute("SELECT end_reason FROM tuning_sessions").fetchone()[0]
    assert reason == "the tuned arrays' operations finished"


def test_a_gone_array_is_reported_once_while_another_knob_keeps_the_session_open(
    box, tmp_path, caplog
):
    user_preset(tmp_path, "wide", WIDE)
    tuner = make_tuner(box, tmp_path)
    tuner.apply("wide")
    stop_md2(box)
    global_min = box.proc / "sys/dev/raid/speed_limit_min"
    global_min.unlink()
    # A real kernel attribute without a store method: the kernel answers EACCES, even to root.
    global_min.symlink_to("/sys/devices/system/cpu/kernel_max")
    with caplog.at_level(logging.INFO):
        tuner.on_tick()
        tuner.on_tick()
    assert status(tuner)["active"] is True
    assert len([r for r in caplog.records if GONE_LINE in r.message]) == 1
    knobs = [k["key"] for k in status(tuner)["knobs"]]
    assert knobs == ["speed_limit_min"]
    global_min.unlink()
    box.write("proc/sys/dev/raid/speed_limit_min", "50000")
    tuner.on_tick()
    assert status(tuner)["active"] is False
    assert box.read("proc/sys/dev/raid/speed_limit_min") == "10000\n"


def test_a_pulled_member_disk_counts_as_restored(box, tmp_path):
    user_preset(
        tmp_path,
        "members",
        'summary = "member read-ahead"\n[knobs.member_read_ahead_kb]\nvalue = 4096\nreason = "x"\n',
    )
    tuner = make_tuner(box, tmp_path)
    tuner.apply("members")
    shutil.rmtree(box.sys / "block" / "sdd")
    result = tuner.revert()
    assert result.gone == ["member_read_ahead_kb@sdd"]
    assert sorted(r.key for r in result.restored or []) == [
        "member_read_ahead_kb@sda",
        "member_read_ahead_kb@sdb",
        "member_read_ahead_kb@sdc",
    ]
    assert box.read("sys/block/sda/queue/read_ahead_kb") == "128\n"
    assert status(tuner)["active"] is False


def test_a_knob_file_missing_on_a_present_array_still_fails_the_revert(box, tmp_path):
    """Only a vanished array or disk excuses a missing file; otherwise it is a real failure."""
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    (box.sys / "block/md2/md/stripe_cache_size").unlink()
    with pytest.raises(TuningFailed, match="stripe_cache_size"):
        tuner.revert()
    assert status(tuner)["active"] is True
