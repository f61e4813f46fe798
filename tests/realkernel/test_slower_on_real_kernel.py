"""Tuning never leaves a real grow slower than it found it: a ceiling far below a real RAID5 3->4
grow's pace, written by a user preset during the grow, is found slower than the pace before it
and put back by mdboost itself (app/tuning/session/never_slower.py). (mdboost never writes a
stripe cache below the one md holds, so a too small cache cannot be forced on a grow.)

One boot (~2 min) runs tests/realkernel/guest/slower_scenario.py on four 1 GiB disks throttled
like hard disks, on REALKERNEL_KERNEL.
"""

from typing import Any

import pytest
import vmharness

pytestmark = pytest.mark.realkernel


@pytest.fixture(scope="module")
def facts(vm_image: vmharness.Image, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    try:
        return vmharness.scenario_facts(
            vm_image,
            "slower_scenario.py",
            tmp_path_factory.mktemp("slower"),
            disks=4,
            disk_size_mib=1024,
            drive_opts=vmharness.HDD_LIKE,
            timeout_s=600,
        )
    except RuntimeError as failed:
        pytest.fail(str(failed))


def test_the_kernel_ran_the_grow_slower_under_the_low_ceiling(facts, figure):
    before, during = facts["pace_before_kib_s"], facts["pace_with_preset_kib_s"]
    figure(f"grow pace before and under a 1000 KiB/s ceiling: {before}, {during} KiB/s")
    assert sorted(facts["applied"]) == ["sync_speed_max@md0", "sync_speed_min@md0"]
    assert facts["active_after_apply"] is True
    assert during < before


def test_mdboost_put_the_originals_back_said_so_and_told_the_owner(facts, figure):
    assert facts["after_revert"] == facts["originals"]
    assert facts["reshaping_after_revert"] == "reshape"
    slower = facts["slower"]
    assert slower["array"] == "md0" and slower["preset"] == "too-low"
    assert slower["ratio"] < 0.95
    assert slower["sentence"].startswith("too-low made md0's reshape slower: ")
    assert "slower" in facts["outbox"]
    figure(f"put back {facts['put_back_after_s']} s after the press: {slower['sentence']}")
