"""The parser against the kernel-exact fixtures in tests/fixtures/kernel (no VM needed)."""

from pathlib import Path

import pytest
from kernel_states import FIXTURES, check_state, disagreements, parse_detail, state_dirs

from app.kernel.mdstat import parse

STATES = state_dirs()


def test_fixtures_cover_every_kernel_format() -> None:
    arrays = [a for s in STATES for a in parse((s / "proc" / "mdstat").read_text()).arrays]
    levels = {a.level for a in arrays}
    actions = {a.sync.action for a in arrays if a.sync}
    assert {"linear", "raid0", "raid1", "raid4", "raid5", "raid6", "raid10"} <= levels
    assert {"resync", "recovery", "reshape", "check", "delayed", "pending"} <= actions
    assert any(a.state == "inactive" for a in arrays)
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
