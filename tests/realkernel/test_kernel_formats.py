"""Boot each real kernel once, walk md through every state, and hold the parser to mdadm.

Runs on every kernel of the short set (conftest.py: REALKERNEL_SMOKE, default 5.10, 6.1, 6.12);
each kernel's committed fixtures are vmharness.fixtures_dir(kernel).
"""

import json
from typing import Any

import pytest
import vmharness
from conftest import image_of
from kernel_states import check_state, state_dirs

pytestmark = pytest.mark.realkernel


@pytest.fixture(scope="module")
def capture(kernel: str, tmp_path_factory: pytest.TempPathFactory) -> vmharness.GuestRun:
    run = vmharness.boot(
        image_of(kernel),
        vmharness.guest_python("capture_formats.py"),
        disk_size_mib=vmharness.CAPTURE_DISK_MIB,
        timeout_s=900,
        run_dir=tmp_path_factory.mktemp(f"capture-{kernel}"),
    )
    if run.rc != 0:
        pytest.fail(f"capture scenario failed in the guest:\n{run.describe()}")
    return run


@pytest.fixture(scope="module")
def facts(capture: vmharness.GuestRun) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((capture.out / "facts.json").read_text())
    return loaded


def test_every_state_parses_like_mdadm_detail(capture: vmharness.GuestRun) -> None:
    captured = state_dirs(capture.out / "fixtures")
    problems = {s.name: p for s in captured if (p := check_state(s))}
    assert problems == {}


def test_committed_fixtures_are_the_states_the_kernel_shows(
    kernel: str, capture: vmharness.GuestRun, facts: dict[str, Any]
) -> None:
    assert vmharness.generation_of(facts["kernel"]) == kernel
    captured = {s.name for s in state_dirs(capture.out / "fixtures")}
    committed = {s.name for s in state_dirs(vmharness.fixtures_dir(kernel))}
    assert captured == committed, (
        f"refresh: .venv/bin/python tests/realkernel/vmharness.py --kernel {kernel} capture"
    )


def test_kernel_answers_writes_as_design_says(facts: dict[str, Any]) -> None:
    answers = facts["kernel_write_answers_during_reshape"]
    # docs/kernel.md's knob table: 17..32768, EINVAL outside; -1 accepted for speed_limit_max.
    assert answers["stripe_cache_size=16"].startswith("EINVAL")
    assert answers["stripe_cache_size=32769"].startswith("EINVAL")
    assert facts["stripe_cache_size=17 when idle"] == "ok"
    assert answers["speed_limit_max=-1"] == "ok -> -1"
    # a bogus action during a reshape: EBUSY up to 6.1, EINVAL on 6.12 (checked before busy)
    assert answers["sync_action=bogus"].split()[0] in ("EBUSY", "EINVAL")
    assert answers["sync_speed_max=system"].endswith("(system)")
    grow = facts["stripe_cache_size_around_grow"]
    assert int(grow["after"]) > int(grow["before"]), "mdadm raises the stripe cache at a grow"


def test_a_raid5_that_lost_two_members_and_a_raid0_without_its_disk_end_broken(
    facts: dict[str, Any],
) -> None:
    """docs/kernel.md's failure table: the word differs by kernel, sysfs says broken on all after I/O."""
    raid5, raid0 = facts["raid5_two_failed"], facts["raid0_member_unplugged"]
    assert raid5["array_state_after_io"] == "broken"
    assert "[3/1] [U__]" in raid5["mdstat_after_io"]
    assert raid5["array_state_at_once"] in ("broken", "write-pending")
    assert raid0["array_state_unplugged"] == "clean"  # md notices only at the next I/O
    assert raid0["array_state_after_io"] == "broken"
    assert raid0["mdadm_fail_rc"] != 0  # mdadm --fail on a raid0 member: EBUSY everywhere
