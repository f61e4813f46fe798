"""Whatever the kernel held before, revert puts it back; one bad knob never stops the rest."""

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.main import create_app
from app.tuning.session.apply import JournalUnavailable, TuningFailed, write_order
from tests.kernel_tree import KernelTree, act_like_md, idle_box, mdstat_text, raid1, syncing_box
from tests.server import tree_server, wait_for
from tests.tuning.tuners import make_tuner, status, user_preset

READ_AHEAD = "sys/block/md2/queue/read_ahead_kb"
HUGE_READ_AHEAD = "131072"  # the kernel takes it; the catalogue's range stops at 65536


@pytest.fixture
def box(tree: KernelTree) -> KernelTree:
    syncing_box(tree)
    tree.write(READ_AHEAD, HUGE_READ_AHEAD)
    return tree


def test_an_original_outside_the_catalogue_range_is_put_back(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("balanced")
    assert box.read(READ_AHEAD) == "4096\n"
    restored = {r.key: r.to for r in tuner.revert().restored or []}
    assert restored["read_ahead_kb@md2"] == HUGE_READ_AHEAD
    assert box.read(READ_AHEAD) == HUGE_READ_AHEAD + "\n"
    assert status(tuner)["active"] is False


def test_a_rollback_puts_back_an_original_outside_the_range(box, tmp_path):
    idle_box(box)
    box.write(READ_AHEAD, HUGE_READ_AHEAD)
    user_preset(
        tmp_path,
        "two",
        'summary = "two"\n[knobs.read_ahead_kb]\nvalue = 4096\nreason = "x"\n'
        '[knobs.group_thread_cnt]\nvalue = 4\nreason = "x"\n',
    )
    tuner = make_tuner(box, tmp_path)
    order = [c.key for c in write_order(list(tuner.plan("two").changes))]
    assert order == ["read_ahead_kb@md2", "group_thread_cnt@md2"]
    failing = box.sys / "block/md2/md/group_thread_cnt"
    failing.unlink()
    failing.symlink_to("/sys/devices/system/cpu/kernel_max")  # the kernel answers EACCES
    with pytest.raises(TuningFailed) as failure:
        tuner.apply("two")
    assert failure.value.rolled_back == ["read_ahead_kb@md2"]
    assert failure.value.rollback_errors == []
    assert box.read(READ_AHEAD) == HUGE_READ_AHEAD + "\n"


def test_md_own_floor_above_the_catalogue_range_is_kept(tree, tmp_path):
    """A 16 MiB chunk on 3 data disks: md keeps read-ahead at 2 stripes = 98304 KiB."""
    syncing_box(tree)
    tuner = make_tuner(tree, tmp_path)
    tuner.apply("boost")
    big_chunks = (
        "md2 : active raid5 sda5[0] sdb5[1] sdc5[2] sdd5[3]\n"
        "      5860484352 blocks super 1.2 level 5, 16384k chunk, algorithm 2 [4/4] [UUUU]\n"
    )
    tree.mdstat(mdstat_text(big_chunks, raid1()))
    tree.md("md2", stripe_cache_size="16384", group_thread_cnt="0")
    restored = {r.key: r.to for r in tuner.revert().restored or []}
    assert restored["read_ahead_kb@md2"] == "98304"
    assert tree.read(READ_AHEAD) == "98304\n"


def retire_a_knob(tuner) -> None:
    """A journaled knob this version no longer knows (as after a downgrade)."""
    session = tuner.conn.execute("SELECT id FROM tuning_sessions WHERE ended IS NULL").fetchone()
    tuner.conn.execute(
        "INSERT INTO tuning_knobs (session_id, key, knob, target, original, desired)"
        " VALUES (?, 'retired@md2', 'retired', 'md2', '1', '2')",
        (session["id"],),
    )


def test_one_knob_that_cannot_be_reverted_does_not_stop_the_others(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    retire_a_knob(tuner)
    with pytest.raises(TuningFailed) as failure:
        tuner.revert()
    assert "retired@md2" in failure.value.message
    assert box.read(READ_AHEAD) == HUGE_READ_AHEAD + "\n"
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"
    assert status(tuner)["active"] is True  # the failure stays visible


def app_settings(tree: KernelTree, tmp_path: Path) -> Settings:
    return Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db", max_cache_mb=1024
    )


def test_start_up_reverts_an_out_of_range_original_instead_of_crashing(box, tmp_path):
    make_tuner(box, tmp_path).apply("boost")
    idle_box(box)  # the reshape finished while mdboost was down: start-up reverts
    box.md("md2", stripe_cache_size="16384", group_thread_cnt="0")
    box.write(READ_AHEAD, "32768")
    with TestClient(create_app(app_settings(box, tmp_path))) as client:
        assert client.get("/api/tuning").json()["active"] is False
        assert client.get("/healthz").json()["reconcile"] == "reverted"
    assert box.read(READ_AHEAD) == HUGE_READ_AHEAD + "\n"


def test_start_up_survives_a_revert_that_fails_and_says_so(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    retire_a_knob(tuner)
    idle_box(box)
    box.md("md2", stripe_cache_size="16384", group_thread_cnt="0")
    with TestClient(create_app(app_settings(box, tmp_path))) as client:
        assert client.get("/healthz").json()["reconcile"] == "revert failed"
        assert client.get("/api/tuning").json()["active"] is True
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"


def test_a_full_disk_reverts_the_kernel_first_and_journals_when_space_returns(tree, small_disk):
    syncing_box(tree)
    before = tree.snapshot()
    tuner = make_tuner(tree, small_disk.path)
    tuner.apply("boost")
    small_disk.fill()
    with pytest.raises(JournalUnavailable, match="database or disk is full"):
        tuner.revert()
    act_like_md(tree, before)
    assert tree.snapshot() == before  # the kernel first, whatever the journal says
    shown = status(tuner)
    assert shown["active"] is False and shown["unrecorded_revert"] is True
    assert shown["state"]["kind"] == "off"  # the kernel holds the originals: nothing is tuned
    with pytest.raises(JournalUnavailable, match="nothing was changed"):
        tuner.apply("boost")  # no apply whose originals cannot be journaled first
    with pytest.raises(JournalUnavailable, match="still"):
        tuner.revert()
    assert tree.snapshot() == before
    small_disk.free()
    tuner.on_tick()  # the sampler's tick journals it once there is room
    ended = tuner.conn.execute("SELECT ended, end_reason FROM tuning_sessions").fetchone()
    assert ended["ended"] is not None and ended["end_reason"] == "requested"
    assert status(tuner)["unrecorded_revert"] is False
    assert tuner.apply("boost").ok is True


def test_a_revert_whose_record_waits_for_room_shows_at_once_as_not_tuned(tree, small_disk):
    """The answer to that revert (a 503) comes with the kernel at its originals: the present
    says so before any tick, never "boost on" over an untuned kernel."""
    syncing_box(tree)
    tuner = make_tuner(tree, small_disk.path)
    present = SnapshotBuilder(tuner.host, tuner.conn, tuner.lock)
    tuner.attach(present)
    present.update(Sampler(tuner.host, tuner.conn, tuner.clock).sample_once())
    tuner.apply("boost")
    assert present.snapshot.job.tuned.kind == "boost"
    small_disk.fill()
    with pytest.raises(JournalUnavailable, match="database or disk is full"):
        tuner.revert()
    assert present.snapshot.job.tuned.kind == "off"


def test_on_a_full_disk_the_server_answers_503_and_sigterm_still_reverts(
    tree, tmp_path, small_disk
):
    syncing_box(tree)
    before = tree.snapshot()
    on_small_disk = {
        "MDBOOST_DB": str(small_disk.path / "mdboost.db"),
        "MDBOOST_API_TOKEN": "test-token-for-tuning-tests-0123456789abcdef0123456789",
    }
    with tree_server(tree, tmp_path, **on_small_disk) as server:
        assert server.request("POST", "/api/boost", {"on": True})[0] == 200
        small_disk.fill()
        status, answer = server.request("POST", "/api/revert", {})
        assert status == 503, answer
        assert "database or disk is full" in answer["detail"]["message"]
        assert "original values again" in answer["detail"]["message"]
        act_like_md(tree, before)
        assert tree.snapshot() == before
        small_disk.free()
        wait_for(lambda: server.get("/api/tuning")["unrecorded_revert"] is False, 10, "the record")
        assert server.get("/api/tuning")["active"] is False
        assert server.request("POST", "/api/boost", {"on": True})[0] == 200
        small_disk.fill()
    # SIGTERM (MDBOOST_REVERT_ON_EXIT) with the disk still full: the kernel goes back anyway.
    act_like_md(tree, before)
    assert tree.snapshot() == before
    log = (tmp_path / "server.log").read_text()
    assert "cannot journal it: database or disk is full" in log
    small_disk.free()
    # Start-up records what SIGTERM could not.
    with tree_server(tree, tmp_path, **on_small_disk) as again:
        assert again.get("/api/tuning")["active"] is False
        assert again.get("/healthz")["reconcile"] == "reverted"
