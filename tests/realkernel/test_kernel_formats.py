"""Boot the real kernel once, walk md through every state, and hold the parser to mdadm."""

import json

import pytest
import vmharness
from kernel_states import check_state, state_dirs

pytestmark = pytest.mark.realkernel


@pytest.fixture(scope="module")
def capture(
    vm_image: vmharness.Image, tmp_path_factory: pytest.TempPathFactory
) -> vmharness.GuestRun:
    run = vmharness.boot(
        vm_image,
        vmharness.guest_python("capture_formats.py"),
        disk_size_mib=vmharness.CAPTURE_DISK_MIB,
        timeout_s=600,
        run_dir=tmp_path_factory.mktemp("capture"),
    )
    if run.rc != 0:
        pytest.fail(f"capture scenario failed in the guest:\n{run.describe()}")
    return run


def test_every_state_parses_like_mdadm_detail(capture: vmharness.GuestRun) -> None:
    captured = state_dirs(capture.out / "fixtures")
    problems = {s.name: p for s in captured if (p := check_state(s))}
    assert problems == {}


def test_committed_fixtures_are_the_states_the_kernel_shows(capture: vmharness.GuestRun) -> None:
    captured = {s.name for s in state_dirs(capture.out / "fixtures")}
    committed = {s.name for s in state_dirs()}
    assert captured == committed, "refresh: .venv/bin/python tests/realkernel/vmharness.py capture"


def test_kernel_answers_writes_as_design_says(capture: vmharness.GuestRun) -> None:
    facts = json.loads((capture.out / "facts.json").read_text())
    answers = facts["kernel_write_answers_during_reshape"]
    # DESIGN.md "Kernel facts": 17..32768, EINVAL outside; -1 accepted for speed_limit_max.
    assert answers["stripe_cache_size=16"].startswith("EINVAL")
    assert answers["stripe_cache_size=32769"].startswith("EINVAL")
    assert facts["stripe_cache_size=17 when idle"] == "ok"
    assert answers["speed_limit_max=-1"] == "ok -> -1"
    assert answers["sync_action=bogus"].startswith("EBUSY")
    assert answers["sync_speed_max=system"].endswith("(system)")
    grow = facts["stripe_cache_size_around_grow"]
    assert int(grow["after"]) > int(grow["before"]), "mdadm raises the stripe cache at a grow"
