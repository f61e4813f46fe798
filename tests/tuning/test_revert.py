"""What a revert writes: each journaled knob's original, and nothing for an array that is gone."""

import shutil

from app.store import journal
from app.tuning.session.revert import revert_steps
from tests.kernel_tree import KernelTree, mdstat_text, raid1
from tests.tuning.tuners import make_tuner

BOOSTED = {"stripe_cache_size@md2", "sync_speed_min@md2", "sync_speed_max@md2", "read_ahead_kb@md2"}


def test_each_knob_goes_back_to_what_mdboost_found(box: KernelTree, tmp_path) -> None:
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    session = journal.open_session(tuner.conn)
    assert session is not None
    steps, gone, errors = revert_steps(tuner.host, tuner.conn, session.id)
    assert (gone, errors) == ([], [])
    back = {step.key: (step.from_value, step.to_value) for step in steps}
    assert set(back) == BOOSTED
    assert back["stripe_cache_size@md2"] == ("16384", "513")
    assert back["sync_speed_min@md2"][1] == "system"


def test_a_stopped_array_s_knobs_are_gone_not_errors(box: KernelTree, tmp_path) -> None:
    tuner = make_tuner(box, tmp_path)
    tuner.apply("boost")
    session = journal.open_session(tuner.conn)
    assert session is not None
    box.mdstat(mdstat_text(raid1()))  # md2 stopped: it leaves mdstat and /sys/block
    shutil.rmtree(box.sys / "block" / "md2")
    steps, gone, errors = revert_steps(tuner.host, tuner.conn, session.id)
    assert (steps, errors) == ([], [])
    assert set(gone) == BOOSTED
