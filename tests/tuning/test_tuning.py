"""Tuning on a temporary /proc + /sys tree: apply, verify, roll back, revert, reconcile."""

import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

from app.kernel import host as host_module
from app.md.knobs import CATALOGUE
from app.store import journal
from app.tuning.session.apply import Busy, TuningFailed, write_order
from tests.kernel_tree import act_like_md, idle_box, mdstat_text, raid1
from tests.server import wait_for
from tests.tuning.tuners import Clock, make_tuner, status, user_preset


def test_boost_then_revert_restores_every_file_byte_for_byte(box, tmp_path):
    before = box.snapshot()
    tuner = make_tuner(box, tmp_path)
    result = tuner.apply("boost")
    assert set(result.applied) == {
        "stripe_cache_size@md2",
        "sync_speed_min@md2",
        "sync_speed_max@md2",
        "read_ahead_kb@md2",
    }
    assert box.read("sys/block/md2/md/stripe_cache_size") == "16384\n"
    assert box.read("sys/block/md2/md/sync_speed_min") == "600000\n"
    assert box.read("sys/block/md2/queue/read_ahead_kb") == "32768\n"
    assert box.read("sys/block/md0/md/sync_speed_min") == "1000 (system)\n"  # not targeted
    tuner.revert()
    assert box.read("sys/block/md2/md/sync_speed_min") == "system\n"
    act_like_md(box, before)
    assert box.snapshot() == before


def test_a_press_reads_each_kernel_file_once_and_asks_the_journal_each_question_once(
    box, tmp_path, monkeypatch
):
    """Planning reads what it checks once (the other arrays' stripe caches by their one file,
    the global limits once for both checks); only a written knob is read again, to verify it.
    The journal's connection asks no question twice: the originals' session and knobs are read
    once, and the knobs the page shows after the write are those just kept."""
    box.write("proc/sys/kernel/random/boot_id", "one-boot\n")
    tuner = make_tuner(box, tmp_path)
    assert tuner.host.boot_id == "one-boot"  # read once per process, before: not the press's
    read: list[str] = []

    def counted(file, *args, **kwargs):
        read.append(str(file))
        return open(file, *args, **kwargs)

    monkeypatch.setattr(host_module, "open", counted, raising=False)
    shown = []  # what the page is told the session's knobs are, right after the write
    tuner.applier.on_write = lambda session, knobs: shown.append(knobs)
    statements: list[str] = []
    tuner.conn.set_trace_callback(statements.append)
    result = tuner.apply("boost")
    tuner.conn.set_trace_callback(None)
    session = journal.open_session(tuner.conn)
    assert session is not None
    held = [
        (k.key, k.original, k.desired, k.desired)
        for k in journal.session_knobs(tuner.conn, session.id)
    ]
    assert [[(k.key, k.original, k.desired, k.current) for k in knobs] for knobs in shown] == [held]
    knobs = (
        "md/stripe_cache_size",
        "md/sync_speed_min",
        "md/sync_speed_max",
        "queue/read_ahead_kb",
    )
    written = {str(box.sys / f"block/md2/{path}") for path in knobs}
    assert len(result.applied) == len(written)
    assert {p: n for p, n in Counter(read).items() if n > 1} == dict.fromkeys(written, 2)
    assert not any(p.endswith("md0/md/sync_action") for p in read)  # not md0's every attribute
    asked = Counter(s for s in statements if s.startswith("SELECT"))
    assert [s for s, n in asked.items() if n > 1] == []


def test_a_failure_on_the_third_of_five_writes_rolls_back_the_first_two(box, tmp_path):
    user_preset(
        tmp_path,
        "five",
        'summary = "five knobs"\n'
        + "".join(
            f'[knobs.{k}]\nvalue = {v}\nreason = "test"\n'
            for k, v in (
                ("stripe_cache_size", 4096),
                ("sync_speed_max", 900000),
                ("sync_speed_min", 50000),
                ("read_ahead_kb", 8192),
                ("speed_limit_min", 20000),
            )
        ),
    )
    tuner = make_tuner(box, tmp_path)
    order = [c.key for c in write_order(list(tuner.plan("five").changes))]
    assert len(order) == 5
    third = order[2]
    knob, _, target = third.partition("@")
    third_path = tuner.host.knob_path(CATALOGUE[knob].path, target or None)
    before = box.snapshot()
    third_path.unlink()
    # A real kernel attribute without a store method: the kernel answers EACCES, even to root.
    third_path.symlink_to("/sys/devices/system/cpu/kernel_max")
    with pytest.raises(TuningFailed) as failure:
        tuner.apply("five")
    assert failure.value.knob == knob
    assert failure.value.kernel == "Permission denied"
    assert "the kernel refused" in failure.value.message
    assert failure.value.rolled_back == list(reversed(order[:2]))
    act_like_md(box, before)
    after = box.snapshot()
    del before[str(third_path.relative_to(box.root))]
    assert after == before
    assert status(tuner)["active"] is False


def test_a_second_preset_keeps_the_true_originals(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("balanced")
    assert box.read("sys/block/md2/md/stripe_cache_size") == "4096\n"
    tuner.apply("boost")
    knobs = {k["key"]: k for k in status(tuner)["knobs"]}
    assert knobs["stripe_cache_size@md2"]["original"] == "513"
    assert knobs["stripe_cache_size@md2"]["desired"] == "16384"
    assert knobs["read_ahead_kb@md2"]["original"] == "384"
    tuner.revert()
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"
    assert box.read("sys/block/md2/queue/read_ahead_kb") == "384\n"


def test_drift_is_shown_and_revert_still_restores_the_originals(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    box.write("sys/block/md2/md/stripe_cache_size", "1024")  # DSM or a person changed it
    tuner.on_tick()
    drift = [k for k in status(tuner)["knobs"] if k["drift"]]
    assert [(k["key"], k["current"], k["desired"]) for k in drift] == [
        ("stripe_cache_size@md2", "1024", "16384")
    ]
    events = tuner.conn.execute("SELECT kind, detail FROM events WHERE kind='drift'").fetchall()
    assert len(events) == 1 and "1024" in events[0]["detail"]
    tuner.revert()
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"


def test_invalid_preset_files_are_reported_and_the_rest_still_load(box, tmp_path):
    user_preset(tmp_path, "typo", 'summary = "x"\n[knobs.stripe_cache]\nvalue = 1\nreason = "x"\n')
    user_preset(
        tmp_path, "huge", 'summary = "x"\n[knobs.stripe_cache_size]\nvalue = 99999\nreason = "x"\n'
    )
    user_preset(
        tmp_path, "negative", 'summary = "x"\n[knobs.speed_limit_max]\nvalue = -1\nreason = "x"\n'
    )
    user_preset(tmp_path, "broken", "summary = \n")
    user_preset(
        tmp_path, "boost", 'summary = "shadow"\n[knobs.read_ahead_kb]\nvalue = 4\nreason = "x"\n'
    )
    tuner = make_tuner(box, tmp_path)
    errors = {Path(e.file).stem: (e.key, e.message) for e in tuner.preset_errors}
    assert errors["typo"][0] == "knobs.stripe_cache" and "unknown knob" in errors["typo"][1]
    assert errors["huge"] == (
        "knobs.stripe_cache_size.value",
        "stripe_cache_size: 99999 is outside 17..32768 entries",
    )
    assert (
        errors["negative"][0] == "knobs.speed_limit_max.value"
        and "-1 is outside" in errors["negative"][1]
    )
    assert errors["broken"][0] == "(syntax)"
    assert errors["boost"][0] == "(file name)"
    assert set(tuner.presets) == {"stock", "balanced", "boost", "quiet"}
    assert tuner.presets["boost"].source == "built-in"


def test_only_one_apply_at_a_time(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    with tuner.operation, pytest.raises(Busy):
        tuner.apply("boost")


def test_an_apply_waits_for_the_samplers_tuning_check_instead_of_failing(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    results: list[dict] = []
    with tuner.lock:  # what on_tick holds for a moment on every tick
        worker = threading.Thread(target=lambda: results.append(tuner.apply("boost")))
        worker.start()
        wait_for(tuner.operation.locked, 10, "the apply to start waiting")
        assert status(tuner)["busy"] is True
    worker.join(timeout=30)
    assert results and results[0].ok is True


def test_revert_happens_when_the_operation_finishes(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    tuner.on_tick()
    assert status(tuner)["active"] is True
    idle_box(box)
    box.md("md2", stripe_cache_size="16384", sync_speed_min="600000 (local)")
    tuner.on_tick()
    assert status(tuner)["active"] is False
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"
    reason = tuner.conn.execute("SELECT end_reason FROM tuning_sessions").fetchone()[0]
    assert reason == "the tuned arrays' operations finished"


@pytest.mark.parametrize("kernel", ["6.12+: mdstat says broken", "5.4-6.11: array_state says"])
def test_a_boost_on_an_array_that_fails_is_reverted_on_the_next_tick(box, tmp_path, kernel):
    """Whatever revert_on_finish says, a boost never stays on a failed array."""
    tuner = make_tuner(box, tmp_path, revert_on_finish=False)
    tuner.apply("boost")
    tuner.on_tick()
    assert status(tuner)["active"] is True
    six_twelve = kernel.startswith("6.12")
    box.mdstat(
        mdstat_text(
            f"md2 : {'broken' if six_twelve else 'active'} raid5 sda5[0] sdb5[1](F) sdc5[2](F)"
            " sdd5[3]\n"
            "      5860484352 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/2] [U__U]\n",
            raid1(),
        )
    )
    # array_state reads broken only where it would read clean; with writes in flight: active.
    box.write("sys/block/md2/md/array_state", "active" if six_twelve else "broken")
    tuner.on_tick()
    assert status(tuner)["active"] is False
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"
    reason = tuner.conn.execute("SELECT end_reason FROM tuning_sessions").fetchone()[0]
    assert reason == "md2 failed"


def test_a_failure_outside_the_tuned_arrays_keeps_the_boost(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    box.write("sys/block/md0/md/array_state", "broken")  # md0 was not tuned
    tuner.on_tick()
    assert status(tuner)["active"] is True


def test_revert_after_boost_hours(box, tmp_path):
    clock = Clock()
    tuner = make_tuner(box, tmp_path, clock, boost_hours=2)
    tuner.apply("boost")
    clock.now += 3600
    tuner.on_tick()
    assert status(tuner)["active"] is True
    clock.now += 3601
    tuner.on_tick()
    assert status(tuner)["active"] is False


def test_reconcile_resumes_while_syncing_and_reverts_when_idle(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    assert make_tuner(box, tmp_path).reconcile() == "resumed"
    assert box.read("sys/block/md2/md/stripe_cache_size") == "16384\n"
    idle_box(box)
    box.md("md2", stripe_cache_size="16384")
    assert make_tuner(box, tmp_path).reconcile() == "reverted"
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"


def test_a_journal_left_in_progress_is_reverted_at_start(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    conn: sqlite3.Connection = tuner.conn
    conn.execute("UPDATE tuning_ops SET state = 'in_progress'")  # as if killed mid-apply
    again = make_tuner(box, tmp_path)
    assert again.reconcile() == "reverted"
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"
    states = [r[0] for r in again.conn.execute("SELECT state FROM tuning_ops ORDER BY id")]
    assert states == ["failed", "done"]


def test_stock_is_a_revert(box, tmp_path):
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    assert tuner.apply("stock").restored
    assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"


def test_revert_keeps_what_md_itself_needs_for_the_new_geometry(box, tmp_path):
    """Real kernel (docs/kernel.md): md sets read-ahead to two stripes and raises it when a grow adds a
    disk; a stripe cache below four chunks stalls a reshape. Revert must not undercut either."""
    box.write("sys/block/md2/queue/read_ahead_kb", "256")  # two stripes of the 3-disk geometry
    box.write("sys/block/md2/md/stripe_cache_size", "32")  # set before mdadm started the grow
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    during = {r.key: r.to for r in tuner.revert().restored or []}
    assert during["stripe_cache_size@md2"] == "65"  # 64 KiB chunk + 1, while reshaping
    assert during["read_ahead_kb@md2"] == "256"  # md raises it only once the grow is done
    tuner.apply("boost")
    idle_box(box)
    box.md("md2", stripe_cache_size="16384")
    box.write("sys/block/md2/queue/read_ahead_kb", "32768")
    after = {r.key: r.to for r in tuner.revert().restored or []}
    assert after["read_ahead_kb@md2"] == "384"  # 2 x 64 KiB x 3 data disks: what md would set
    assert after["stripe_cache_size@md2"] == "65"  # the session's original, taken at 65
    assert box.read("sys/block/md2/queue/read_ahead_kb") == "384\n"
