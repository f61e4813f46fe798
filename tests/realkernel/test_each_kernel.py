"""The short set on every kernel generation (5.10, 6.1, 6.12; issue 28), one boot each.

tests/realkernel/guest/api_scenarios.py's smoke: the installed mdboost serves on the real kernel;
boost on a real RAID5 3->4 reshape, kill -9 while boosted, restart, and the revert at the
reshape's end; then a RAID5 that lost two members and a RAID0 whose member disk was unplugged,
which must show as failed in the API, the page, /metrics and a notification, never "healthy".
"""

import json
from typing import Any

import pytest
import vmharness
from conftest import image_of

pytestmark = pytest.mark.realkernel

READ_AHEAD_FLOOR_KB = 2 * 64 * 3  # md: two full stripes, 64 KiB chunks, 3 data disks after the grow


@pytest.fixture(scope="module")
def smoke(kernel: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    image = image_of(kernel)
    run = vmharness.boot(
        image,
        vmharness.guest_python("api_scenarios.py", "smoke"),
        disk_size_mib=512,
        timeout_s=900,
        run_dir=tmp_path_factory.mktemp(f"smoke-{kernel}"),
    )
    if run.rc != 0:
        pytest.fail(f"smoke scenario failed on {image.kernel_version}:\n{run.describe()}")
    facts: dict[str, Any] = json.loads((run.out / "facts.json").read_text())
    facts["kernel_version"] = image.kernel_version
    return facts


def test_boots_the_kernel_asked_for(kernel: str, smoke: dict[str, Any]) -> None:
    assert vmharness.generation_of(smoke["kernel_version"]) == kernel


def test_boost_raises_the_reshape_and_one_verdict_names_why(smoke: dict[str, Any]) -> None:
    boost = smoke["boost"]
    assert boost["answer"]["ok"] is True
    assert boost["knobs"]["sync_speed_min"] == "600000 (local)"
    assert boost["knobs"]["read_ahead_kb"] == "32768"
    assert boost["after_kib_s"] > 1.5 * boost["before_kib_s"], boost
    # held at 2000 KiB/s by speed_limit_max: the diagnosis names the limit
    assert smoke["diagnosis"]["verdict"] == "held_by_max", smoke["diagnosis"]


def test_kill9_then_the_reshape_end_restores_every_knob(smoke: dict[str, Any]) -> None:
    kill9, original = smoke["kill9"], smoke["knobs_original"]
    assert kill9["knobs_after_kill"]["sync_speed_min"] == "600000 (local)"  # killed while boosted
    if kill9["action_at_restart"] == "reshape":  # still boosted: the journal survived
        assert kill9["tuning_after_restart"]["active"] is True
    assert kill9["tuning_after_end"]["active"] is False
    assert kill9["geometry_after"] == {"raid_disks": "4", "chunk_kb": 64}
    restored = dict(kill9["knobs_after_revert"])
    # md raised read-ahead to two full stripes when the grow ended (5.10 and 6.x alike): the
    # revert keeps that floor rather than the smaller original
    assert int(original["read_ahead_kb"]) < READ_AHEAD_FLOOR_KB
    assert restored.pop("read_ahead_kb") == str(READ_AHEAD_FLOOR_KB)
    original = {k: v for k, v in original.items() if k != "read_ahead_kb"}
    original.pop("vdd/read_ahead_kb", None)  # the new member is not a member before the grow
    restored.pop("vdd/read_ahead_kb", None)
    assert restored == original


def test_failed_arrays_are_failed_everywhere(smoke: dict[str, Any]) -> None:
    failed = smoke["failed"]
    for name in ("md0", "md20"):
        view = failed["api"][name]
        assert (view["failed"], view["severity"]) == (True, "critical"), (name, view)
        assert "healthy" not in failed["cards"][name].lower(), failed["cards"][name]
        assert 'class="array failed' in failed["cards"][name], failed["cards"][name]
        assert f'mdboost_md_failed{{device="{name}"}} 1.0' in failed["metrics"]
        assert f"{name} FAILED" in failed["title"]
    assert sorted(failed["api_failed"]) == ["md0", "md20"]
    assert failed["headline_needs_you"] is True
    titles = sorted(message["title"] for _, message in smoke["notifications"])
    assert titles == ["md0 is broken", "md20 is broken"]
