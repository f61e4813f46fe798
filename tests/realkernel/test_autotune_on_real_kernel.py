"""Auto-tune on the real kernel: a sweep completes on a real reshape and keeps its
choice, the stripe cache only climbs, revert restores every knob, and md keeps a larger
cache's RAM while the sync runs (the floor).

One boot (~2 min) runs tests/realkernel/guest/autotune_scenario.py: a RAID5 3->4 grow on four
1.5 GiB disks throttled like hard disks, DSM-like defaults, mdboost with short steps. Whether the
choice is the best is scripts/bench_autotune.py's question (long runs, figures, no asserts).
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
            "autotune_scenario.py",
            tmp_path_factory.mktemp("autotune"),
            disks=4,
            disk_size_mib=1536,
            drive_opts=vmharness.HDD_LIKE,
            timeout_s=600,
        )
    except RuntimeError as failed:
        pytest.fail(str(failed))


def test_a_sweep_completes_before_the_grows_knee_and_keeps_its_choice(facts):
    sweep = facts["sweep"]
    assert sweep["state"] == "done", sweep["reason"]
    assert facts["reshaping_at_sweep_end"] == "reshape"
    assert facts["done_share_at_sweep_end"] < 2 / 3  # measured before the knee, as planned
    chosen = sweep["chosen"]
    assert set(chosen) == {"stripe_cache_size"}  # read-ahead was at the ladder's top already
    kept = facts["kept_in_kernel"]
    assert kept["stripe_cache_size"] == str(chosen["stripe_cache_size"])
    assert sweep["reason"].startswith(f"kept stripe cache {chosen['stripe_cache_size']}")


def test_the_stripe_cache_only_climbs_and_every_value_is_measured(facts):
    sweep = facts["sweep"]
    ladder = [s for s in sweep["steps"] if s["knob"] == "stripe_cache_size"]
    values = [s["value"] for s in ladder]
    assert values == sorted(values), values
    assert values[0] == int(facts["originals"]["stripe_cache_size"])
    assert facts["largest_cache_seen"] == values[-1] > values[0]
    scored = [s for s in ladder if s["score"] is not None]
    assert scored and all(s["speed_kb_s"] > 0 for s in scored)
    assert max(s["score"] for s in scored) == 1.0


def test_revert_restores_the_originals_while_the_reshape_runs_on(facts):
    assert facts["revert_status"] == 200
    assert facts["after_revert"] == facts["originals"]
    assert facts["reshaping_after_revert"] == "reshape"


def test_md_keeps_the_larger_caches_ram_while_the_sync_runs(facts):
    # The floor (docs/kernel.md, "The stripe cache is a floor"): the ladder's top took its RAM
    # at once; writing smaller values during the busy reshape (the choice, then the revert) frees
    # only the stripes idle at that instant, so how much comes back depends on the moment:
    # measured 0 of 294 MiB, 157 of 292 MiB and 267 of 290 MiB for 16384 (the last two on a
    # quiet host, where the reshape keeps fewer stripes busy), 15 of 575 MiB for 32768. What
    # holds each time: more than the reverted 256 entries' 4 MiB stays taken until the sync ends.
    taken = facts["mem_before_grow_mib"] - facts["mem_at_largest_cache_mib"]
    given_back = facts["mem_after_revert_mib"] - facts["mem_at_largest_cache_mib"]
    assert taken > 200  # 16384 stripes x 4 disks x 4 KiB = 256 MiB
    assert taken - given_back > 8  # still held: twice what 256 entries need
