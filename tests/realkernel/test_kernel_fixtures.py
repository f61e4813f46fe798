"""The parser against the kernel-exact fixtures in tests/fixtures/kernel (no VM needed)."""

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

from app.kernel.mdstat_parse import parse

STATES = state_dirs()
RENDERED = rendered_dirs()


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


@pytest.mark.parametrize("state", STATES, ids=[s.name for s in STATES])
def test_parser_agrees_with_mdadm_detail(state: Path) -> None:
    assert check_state(state) == []


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
