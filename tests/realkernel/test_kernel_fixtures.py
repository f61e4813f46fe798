"""The parser against the kernel-exact fixtures of each kernel (no VM needed): tests/fixtures/
kernel (6.1), kernel-5.10 and kernel-6.12."""

import json
import shutil
from pathlib import Path

import pytest
import vmharness
from kernel_states import (
    FIXTURES,
    check_state,
    disagreements,
    parse_detail,
    rendered_dirs,
    state_dirs,
)

from app.kernel.host import Host
from app.kernel.mdstat_parse import parse
from app.live import array_view
from app.md import failure
from tests.present import array_now

STATES = state_dirs()
RENDERED = rendered_dirs()
OTHER_KERNELS = [k for k in vmharness.KERNELS if k != vmharness.DEFAULT_KERNEL]
EVERY_STATE = [
    pytest.param(state, id=f"{kernel}/{state.name}")
    for kernel in vmharness.KERNELS
    for state in state_dirs(vmharness.fixtures_dir(kernel))
]
# The failed arrays each kernel's capture ends with (guest/capture_formats.py failed_arrays()).
FAILED_STATES = {"raid5-two-failed": "md0", "raid0-member-unplugged": "md20"}


def test_fixtures_cover_every_kernel_format() -> None:
    every = STATES + RENDERED
    arrays = [a for s in every for a in parse((s / "proc" / "mdstat").read_text()).arrays]
    levels = {a.level for a in arrays}
    actions = {a.sync.action for a in arrays if a.sync}
    assert {"linear", "raid0", "raid1", "raid4", "raid5", "raid6", "raid10"} <= levels
    assert {"resync", "recovery", "reshape", "check", "delayed", "pending"} <= actions
    assert any(a.state == "inactive" for a in arrays)
    assert any(a.state == "broken" for a in arrays)
    assert any(a.read_only for a in arrays) and any(a.auto_read_only for a in arrays)
    assert any(a.bitmap for a in arrays)
    flags = {f for a in arrays for d in a.devices for f in d.flags}
    assert {"F", "S"} <= flags


@pytest.mark.parametrize("state", EVERY_STATE)
def test_parser_agrees_with_mdadm_detail(state: Path) -> None:
    assert check_state(state) == []


@pytest.mark.parametrize("generation", OTHER_KERNELS)
def test_every_kernel_has_its_own_capture(generation: str) -> None:
    root = vmharness.fixtures_dir(generation)
    facts = json.loads((root / "kernel-facts.json").read_text())
    assert vmharness.generation_of(facts["kernel"]) == generation
    assert {s.name for s in state_dirs(root)} >= {s.name for s in STATES} - {
        "linear-and-raid4-recovery"
    }


@pytest.mark.parametrize("generation", list(vmharness.KERNELS))
def test_failed_arrays_read_as_failed_on_every_kernel(generation: str, tmp_path: Path) -> None:
    """Whatever word the kernel prints, the app calls these failed and critical."""
    for state, name in FAILED_STATES.items():
        root = tmp_path / state
        shutil.copytree(vmharness.fixtures_dir(generation) / state, root)
        host = Host(root / "proc", root / "sys")
        md = array_view.current(host)
        assert array_view.failed_names(md, host) == [name], (generation, state)
        view = array_view.array_view(array_now(md.arrays[0], host.read_array_sysfs(name)))
        assert (view.failed, view.severity) == (True, "critical"), (generation, state)
        # and from mdstat alone (sysfs unreadable) where the counts tell: the raid5
        if state == "raid5-two-failed":
            assert failure.is_failed(md.arrays[0], None)


def test_what_differs_between_the_kernels() -> None:
    """The facts of docs/kernel.md's failure table, as each kernel's capture recorded them."""
    facts = {
        k: json.loads((vmharness.fixtures_dir(k) / "kernel-facts.json").read_text())
        for k in vmharness.KERNELS
    }
    assert ["new_level" in f["raid5_md_attributes"] for f in facts.values()] == [False, False, True]
    assert ["[linear]" in f["personalities"] for f in facts.values()] == [True, True, False]
    assert [f["raid5_two_failed"]["second_fail_rc"] == 0 for f in facts.values()] == [
        True,
        False,
        False,
    ]
    words = [f["raid5_two_failed"]["mdstat_after_io"].split()[2] for f in facts.values()]
    assert words == ["active", "active", "broken"]
    assert facts["5.10"]["raid5_two_failed"]["array_state_at_once"] == "broken"
    for f in facts.values():
        personalities = parse(f["personalities"] + "\nunused devices: <none>\n").personalities
        assert personalities is not None and "raid5" in personalities


def test_a_wrong_reading_is_caught() -> None:
    """The comparison is not vacuous: a detail that disagrees in each field is reported."""
    state = FIXTURES / "raid5-reshape"
    array = parse((state / "proc" / "mdstat").read_text()).arrays[0]
    text = (state / "mdadm-detail" / "md0.txt").read_text()
    text = text.replace("Raid Level : raid5", "Raid Level : raid6")
    text = text.replace("Raid Devices : 4", "Raid Devices : 3")
    text = text.replace("reshaping", "recovering").replace("/dev/vdd", "/dev/vde")
    problems = "\n".join(disagreements(array, parse_detail(text), "clean"))
    for field in ("level", "raid devices", "sync action", "members"):
        assert f"md0 {field}:" in problems


def test_rendered_states_parse_cleanly_and_say_why_they_are_not_captured() -> None:
    assert [s.name for s in RENDERED] == ["raid5-broken"]
    for state in RENDERED:
        parsed = parse((state / "proc" / "mdstat").read_text())
        assert parsed.warnings == () and parsed.arrays
        why = (state / "RENDERED.md").read_text()
        assert "md.c" in why and "6.1" in why
        assert not (state / "mdadm-detail").exists()  # nothing made up for mdadm


def test_recapture_keeps_rendered_states(tmp_path: Path) -> None:
    copy = tmp_path / "kernel"
    shutil.copytree(FIXTURES, copy)
    vmharness.remove_captured(copy)
    assert [s.name for s in rendered_dirs(copy)] == ["raid5-broken"]
    assert state_dirs(copy) == []
