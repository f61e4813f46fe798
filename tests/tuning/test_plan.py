"""Planning a preset on a temporary /proc + /sys tree: what is skipped, the RAM budget, min <= max."""

import os

import pytest

from app.tuning.planning.targets import PlanError
from tests.tuning.tuners import make_tuner, user_preset


def test_a_missing_knob_is_skipped_and_the_rest_applies(box, tmp_path):
    os.remove(box.sys / "block/md2/queue/read_ahead_kb")
    tuner = make_tuner(box, tmp_path)
    result = tuner.apply("boost")
    assert result.plan is not None
    skipped = [s.model_dump() for s in result.plan.skipped]
    assert skipped == [
        {"knob": "read_ahead_kb", "target": "md2", "why": "not supported on this kernel"}
    ]
    assert "stripe_cache_size@md2" in result.applied


def test_the_stripe_cache_fits_the_ram_budget(box, tmp_path):
    tuner = make_tuner(box, tmp_path, max_cache_mb=40)
    plan = tuner.plan("boost")
    (change,) = [c for c in plan.changes if c.knob == "stripe_cache_size"]
    assert change.to_value == "2048"  # 2048 x 4 KiB x 4 disks = 32 MiB <= 40 MiB
    assert plan.cost_mib <= 40 and change.cost_mib == 32
    assert any("RAM budget" in note for note in plan.notes)
    tiny = make_tuner(box, tmp_path, max_cache_mb=1).plan("boost")
    assert "stripe_cache_size@md2" in tiny.unchanged  # never shrinks below what is there


def test_the_default_budget_is_a_quarter_of_memavailable(box, tmp_path):
    box.write("proc/meminfo", "MemTotal: 2000000 kB\nMemAvailable: 163840 kB\n")
    plan = make_tuner(box, tmp_path, max_cache_mb=None).plan("boost")
    assert plan.budget_mib == 40.0
    (change,) = [c for c in plan.changes if c.knob == "stripe_cache_size"]
    assert change.to_value == "2048"


def test_a_minimum_above_its_maximum_is_refused_and_nothing_is_written(box, tmp_path):
    user_preset(
        tmp_path,
        "upside",
        'summary = "bad"\n[knobs.sync_speed_min]\nvalue = 300000\nreason = "x"\n',
    )
    before = box.snapshot()
    tuner = make_tuner(box, tmp_path)
    with pytest.raises(PlanError, match="sync_speed_min 300000 would be above sync_speed_max"):
        tuner.apply("upside")
    assert box.snapshot() == before


def test_group_thread_cnt_is_never_touched_while_syncing(box, tmp_path):
    user_preset(
        tmp_path, "threads", 'summary = "t"\n[knobs.group_thread_cnt]\nvalue = 4\nreason = "x"\n'
    )
    tuner = make_tuner(box, tmp_path)
    plan = tuner.plan("threads")
    assert plan.changes == ()
    assert plan.skipped[0].why == "never changed while a sync runs"
