"""Each verdict from two captures of a real kernel 30 s apart (tests/fixtures/diagnosis, written
by the real-kernel scenarios): the rules find it in the rates between them, the hysteresis holds
it back until it has held a minute."""

import shutil
from pathlib import Path

import pytest

from app.diagnosis.rules import judge
from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.diagnosis_tracker import Tracker
from tests import PROJECT_ROOT
from tests.diagnosis.readings import tick_with_readings

CAPTURES = PROJECT_ROOT / "tests" / "fixtures" / "diagnosis"
VERDICTS = ("held_by_max", "yielding", "slow_member", "disks_limit")


def test_every_verdict_the_real_kernel_showed_is_captured() -> None:
    assert sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()) == sorted(VERDICTS)


@pytest.mark.parametrize("verdict", VERDICTS)
def test_the_rules_find_it_between_two_captures(verdict: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tracker = Tracker(Host(tree / "proc", tree / "sys"))
    diagnoses = {}
    for moment in ("t0", "t1"):
        capture = CAPTURES / verdict / moment
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(capture, tree)
        now = float((capture / "captured_at").read_text())
        host = tracker.host
        parsed = mdstat_parse.parse((tree / "proc" / "mdstat").read_text())
        sysfs = {a.name: host.read_array_sysfs(a.name) for a in parsed.arrays}
        diagnoses, _ = tick_with_readings(
            tracker, now, parsed, sysfs, host.read_global_speed_limits()
        )
    diagnosis = diagnoses["md0"]
    assert diagnosis.observation.window_s is not None and diagnosis.observation.window_s >= 25
    found = judge(diagnosis.observation)
    assert verdict in found, diagnosis.readings
    assert diagnosis.verdicts == ()  # 30 s of holding: not shown yet
    assert verdict in diagnosis.pending
