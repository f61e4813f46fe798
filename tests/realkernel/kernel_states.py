"""Check a captured array state: does app.kernel.mdstat_parse.parse() see what `mdadm --detail` and sysfs see?

A state directory (tests/fixtures/kernel/<state>/, or one fresh from the VM) holds proc/mdstat,
sys/block/mdX/md/*, and mdadm-detail/mdX.txt for each array, all read at the same moment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.kernel.mdstat_parse import parse
from app.md.mdstat import Array

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"
RENDERED = "RENDERED.md"  # marks a state folder rendered from md.c's format, not captured

# mdadm's words in "State :" (mdadm Detail.c) -> the action the kernel's mdstat line names.
_DETAIL_ACTIONS = (
    ("resyncing (DELAYED)", "delayed"),
    ("resyncing (PENDING)", "pending"),
    ("resyncing", "resync"),
    ("recovering", "recovery"),
    ("reshaping", "reshape"),
    ("checking", "check"),
)


@dataclass(frozen=True)
class Member:
    name: str  # "vda1"
    number: int | None  # mdadm's Number column (the kernel's slot, printed as name[N] in mdstat)
    state: str  # "active sync", "spare", "faulty", "spare rebuilding", "" for an inactive array


@dataclass(frozen=True)
class Detail:
    level: str | None
    raid_devices: int | None
    array_size_kib: int | None
    state: str  # e.g. "clean, degraded, recovering"; "clean, FAILED", "broken, FAILED"
    members: tuple[Member, ...]
    unnamed: int = 0  # members mdadm lists as "missing": in the array, their device gone

    @property
    def failed(self) -> bool:
        """mdadm says the array has failed (it prints FAILED, and "broken" where md does)."""
        return "FAILED" in self.state or "broken" in self.state


def parse_detail(text: str) -> Detail:
    """Parse the fields we compare out of `mdadm --detail /dev/mdX` (mdadm 4.x layout)."""
    fields: dict[str, str] = {}
    members: list[Member] = []
    missing = 0
    in_table = False
    for line in text.splitlines():
        if re.match(r"^\s*Number\s+Major\s+Minor\s+RaidDevice", line):
            in_table = True
            continue
        if in_table:
            words = line.split()
            if words and words[-1].startswith("/dev/"):
                number = int(words[0]) if words[0].isdigit() else None
                members.append(
                    Member(words[-1].removeprefix("/dev/"), number, " ".join(words[4:-1]))
                )
            elif words[-1:] == ["missing"] and words[0].isdigit():
                missing += 1  # a member whose device node is gone (its disk unplugged)
            continue
        key, sep, value = line.partition(" : ")
        if sep:
            fields[key.strip()] = value.strip()
    size = fields.get("Array Size")
    return Detail(
        level=fields.get("Raid Level"),
        raid_devices=int(fields["Raid Devices"]) if "Raid Devices" in fields else None,
        array_size_kib=int(size.split()[0]) if size else None,
        state=fields.get("State", ""),
        members=tuple(members),
        unnamed=missing,
    )


def detail_action(state: str) -> str | None:
    for words, action in _DETAIL_ACTIONS:
        if words in state:
            return action
    return None


def disagreements(array: Array, detail: Detail, array_state: str | None) -> list[str]:
    """Every way the parser's view of one array differs from mdadm's (empty when they agree)."""
    problems: list[str] = []

    def expect(what: str, parsed: object, reference: object) -> None:
        if parsed != reference:
            problems.append(f"{array.name} {what}: parser {parsed!r}, mdadm/sysfs {reference!r}")

    inactive = "inactive" in detail.state
    if detail.failed:  # mdstat's word for it: "broken" since 6.12, "active" before
        expect("state", array.state in ("active", "broken"), True)
    else:
        expect("state", array.state, "inactive" if inactive else "active")
    named = sorted(d.name for d in array.devices)
    if detail.unnamed:  # mdstat still names an unplugged member; mdadm cannot
        expect("members", len(named), len(detail.members) + detail.unnamed)
        named = [n for n in named if n in {m.name for m in detail.members}]
    expect("members", named, sorted(m.name for m in detail.members))
    if inactive:
        return problems
    expect("level", array.level, detail.level)
    if detail.array_size_kib is not None:
        expect("blocks", array.blocks, detail.array_size_kib)
    if detail.raid_devices is not None:
        # raid0 and linear print no [n/m]: their member count is the raid device count.
        counted = array.raid_disks if array.raid_disks is not None else len(array.devices)
        expect("raid devices", counted, detail.raid_devices)
    if array.raid_disks is not None and array.active_disks is not None:
        # mdadm says FAILED instead of degraded when too few members are left
        reference = "degraded" in detail.state or detail.failed
        expect("degraded", array.active_disks < array.raid_disks, reference)
    expect("sync action", array.sync.action if array.sync else None, detail_action(detail.state))
    by_name = {m.name: m for m in detail.members}
    for device in array.devices:
        member = by_name.get(device.name)
        if member is None:
            continue  # already reported as a members disagreement
        if member.number is not None:
            expect(f"{device.name} slot", device.index, member.number)
        expect(f"{device.name} faulty", "F" in device.flags, "faulty" in member.state)
        expect(f"{device.name} spare", "S" in device.flags, member.state == "spare")
    if array_state is not None:
        expect("read-only", array.read_only, array_state == "readonly")
        expect("auto-read-only", array.auto_read_only, array_state == "read-auto")
    return problems


def check_state(state_dir: Path) -> list[str]:
    """Compare every array of one captured state; also fail on parser warnings."""
    mdstat = parse((state_dir / "proc" / "mdstat").read_text())
    problems = [f"parser warning: {w}" for w in mdstat.warnings]
    details = sorted((state_dir / "mdadm-detail").glob("*.txt"))
    if not details:
        problems.append("no mdadm --detail captured")
    for detail_file in details:
        name = detail_file.stem
        array = mdstat.array(name)
        if array is None:
            problems.append(f"{name}: in mdadm --detail but not parsed from mdstat")
            continue
        array_state_file = state_dir / "sys" / "block" / name / "md" / "array_state"
        array_state = array_state_file.read_text().strip() if array_state_file.exists() else None
        problems += disagreements(array, parse_detail(detail_file.read_text()), array_state)
    return problems


def failed_everywhere_problems(facts: dict[str, Any]) -> list[str]:
    """How the app misshows the guest's two failed arrays (api_scenarios.smoke_failed_arrays):
    each must be failed and critical in the API, on its card (never "healthy"), in the page's
    title and headline, in /metrics, and in a "broken" notification. Empty when all agree."""
    failed, problems = facts["failed"], []
    for name in ("md0", "md20"):
        view, card = failed["api"][name], failed["cards"][name]
        if (view["failed"], view["severity"]) != (True, "critical"):
            problems.append(f"API {name}: {view}")
        if "healthy" in card.lower() or 'class="array failed' not in card:
            problems.append(f"card {name}: {card[:300]}")
        if f'mdboost_md_failed{{device="{name}"}} 1.0' not in failed["metrics"]:
            problems.append(f"/metrics {name}: {failed['metrics']}")
        if f"{name} FAILED" not in failed["title"]:
            problems.append(f"title: {failed['title']}")
    if sorted(failed["api_failed"]) != ["md0", "md20"]:
        problems.append(f"API failed list: {failed['api_failed']}")
    if not failed["headline_needs_you"]:
        problems.append("headline does not say 'Needs you now'")
    titles = sorted(message["title"] for _, message in facts["notifications"])
    if titles != ["md0 is broken", "md20 is broken"]:
        problems.append(f"notifications: {titles}")
    return problems


def state_dirs(root: Path = FIXTURES) -> list[Path]:
    """The captured states (a folder rendered from md.c's format, RENDERED.md, is not one)."""
    return sorted(p.parents[1] for p in root.glob("*/proc/mdstat") if not is_rendered(p.parents[1]))


def rendered_dirs(root: Path = FIXTURES) -> list[Path]:
    """States the VM's kernel cannot show, rendered from md.c's format (each says why)."""
    return sorted(p.parents[1] for p in root.glob("*/proc/mdstat") if is_rendered(p.parents[1]))


def is_rendered(state_dir: Path) -> bool:
    return (state_dir / RENDERED).is_file()
