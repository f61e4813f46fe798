"""The real mdboost server on the real kernel: sampling, boost, revert, refusal, kill -9.

One boot runs tests/realkernel/guest/api_scenarios.py, which drives `mdboost serve` over HTTP
from inside the VM and records what it saw; each test below checks one promise of the core,
of tuning's exact revert or of boost against that record.
"""

import json
from pathlib import Path
from typing import Any

import pytest
import vmharness
from kernel_states import (
    check_state,
    detail_action,
    failed_everywhere_problems,
    parse_detail,
    state_dirs,
)

pytestmark = pytest.mark.realkernel


@pytest.fixture(scope="module")
def api_run(
    vm_image: vmharness.Image, tmp_path_factory: pytest.TempPathFactory
) -> vmharness.GuestRun:
    run = vmharness.boot(
        vm_image,
        vmharness.guest_python("api_scenarios.py"),
        disk_size_mib=1536,
        timeout_s=900,
        run_dir=tmp_path_factory.mktemp("api"),
    )
    if run.rc != 0:
        pytest.fail(f"API scenario failed in the guest:\n{run.describe()}")
    return run


@pytest.fixture(scope="module")
def facts(api_run: vmharness.GuestRun) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((api_run.out / "facts.json").read_text())
    return loaded


def test_parser_and_api_agree_with_mdadm_detail(api_run: vmharness.GuestRun) -> None:
    states = [s for s in state_dirs(api_run.out / "fixtures") if not s.name.startswith("failed")]
    assert len(states) == 7
    problems = {s.name: p for s in states if (p := check_state(s))}
    assert problems == {}
    for state in states:
        views = json.loads((state / "api-arrays.json").read_text())["arrays"]
        for detail_file in (state / "mdadm-detail").glob("*.txt"):
            api_problems = api_disagreements(detail_file, views)
            assert api_problems == [], state.name


def api_disagreements(detail_file: Path, views: list[dict[str, Any]]) -> list[str]:
    """The API's fields vs mdadm's (progress numbers aside: they move between the two reads)."""
    detail = parse_detail(detail_file.read_text())
    view = next(v for v in views if v["name"] == detail_file.stem)
    action = (view["sync"] or {}).get("action")
    got = (view["level"], view["raid_disks"], sorted(d["name"] for d in view["devices"]), action)
    want = (
        detail.level,
        detail.raid_devices,
        sorted(m.name for m in detail.members),
        detail_action(detail.state),
    )
    return [] if got == want else [f"{detail_file.stem}: API {got}, mdadm {want}"]


def test_failed_arrays_are_failed_everywhere(facts: dict[str, Any]) -> None:
    """A RAID5 that lost two members and a RAID0 whose disk is unplugged."""
    assert failed_everywhere_problems(facts) == []


def test_samples_and_runs_land_in_sqlite(facts: dict[str, Any]) -> None:
    db = facts["sqlite"]
    runs = {(array, action) for array, action, _, finished in db["runs"] if finished}
    assert {("md0", "recovery"), ("md0", "check"), ("md0", "reshape")} <= runs
    assert {("md6", "resync"), ("md1", "resync")} <= runs
    assert sum(1 for _, action, *_ in db["runs"] if action == "recovery") == 2  # create, re-add
    per_action = {(array, action): n for array, action, n in db["samples_per_action"]}
    for key in [("md0", "recovery"), ("md0", "check"), ("md0", "reshape"), ("md6", "resync")]:
        assert per_action.get(key, 0) >= 2, key
    assert db["events"].get("apply", 0) >= 2 and db["events"].get("revert", 0) >= 2
    assert facts["md0_samples_points"] >= 2


def test_runs_that_finished_are_marked_completed_and_the_one_stopped_interrupted(
    facts: dict[str, Any],
) -> None:
    """md0's second check was stopped by hand past md's first checkpoint: md kept where it got
    to in sync_min, and only that run is interrupted."""
    outcomes = [(a, action, outcome) for a, action, outcome, _ in facts["sqlite"]["runs"]]
    stopped = [o for o in outcomes if o[2] != "completed"]
    assert stopped == [("md0", "check", "interrupted")], outcomes
    checks = [o for o in outcomes if o[:2] == ("md0", "check")]
    assert checks == [("md0", "check", "completed"), ("md0", "check", "interrupted")], outcomes
    assert int(facts["stopped_check_sync_min"]) > 0


def test_boost_changes_the_kernel_values_and_speed_rises(facts: dict[str, Any]) -> None:
    boost, original = facts["boost"], facts["knobs_original"]
    assert boost["answer"]["ok"] is True
    knobs = boost["knobs"]
    assert knobs["sync_speed_min"] == "600000 (local)"
    assert knobs["sync_speed_max"] == "2000000 (local)"
    assert knobs["read_ahead_kb"] == "32768"
    assert int(knobs["stripe_cache_size"]) > int(original["stripe_cache_size"])
    assert boost["after_kib_s"] > 1.5 * boost["before_kib_s"], boost


def test_boost_without_login_is_refused_and_writes_nothing(facts: dict[str, Any]) -> None:
    assert facts["boost_without_token"]["status"] == 401
    assert facts["boost_without_token"]["knobs"] == facts["knobs_original"]


def test_revert_restores_every_knob(facts: dict[str, Any]) -> None:
    assert facts["revert"]["answer"]["ok"] is True
    assert facts["revert"]["knobs"] == facts["knobs_original"]
    # "original" is what mdadm left, not the kernel default: it raised 256 -> 513 at the grow.
    before_grow, at_grow = facts["stripe_cache_size_mdadm_grow"]
    assert int(at_grow) > int(before_grow)
    assert facts["knobs_original"]["stripe_cache_size"] == at_grow


def test_a_kernel_refusal_is_a_clean_error_and_rolls_back(facts: dict[str, Any]) -> None:
    refused = facts["refused"]
    assert refused["status"] == 409
    detail = refused["answer"]["detail"]
    assert detail["knob"] == "read_ahead_kb"
    assert detail["kernel"] == "Read-only file system"
    assert detail["rolled_back"] and detail["rollback_errors"] == []
    assert refused["knobs"] == facts["knobs_original"]
    assert facts["tuning_after_refusal"]["active"] is False


def test_kill9_mid_boost_then_restart_restores_the_originals(facts: dict[str, Any]) -> None:
    kill9 = facts["kill9"]
    assert kill9["knobs_after_kill"]["sync_speed_min"] == "600000 (local)"  # killed while boosted
    assert kill9["tuning_after_restart"]["active"] is True  # the journal survived; resumed
    assert kill9["revert_status"] == 200
    assert kill9["knobs_after_revert"] == facts["knobs_original"]
