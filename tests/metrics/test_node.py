"""node_md_* against node_exporter's own answers: its end-to-end fixture, and kernel captures
with values derived by hand from collector/mdadm_linux.go and procfs mdstat.go / mdraid.go."""

from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.snapshot import ArrayNow, Snapshot
from app.md import mdstat
from app.metrics import node
from app.metrics.exposition import render
from tests.metrics.snapshots import FIXTURES, KERNEL_STATES, kernel_snapshot

NODE_EXPORTER = FIXTURES / "node_exporter"
SYSFS_SERIES = ("node_md_raid_disks", "node_md_degraded")


def node_samples(snapshot: Snapshot) -> dict[str, float]:
    """{'name{label="v",...}': value} of the node_md_* samples /metrics prints for `snapshot`."""
    text = render(snapshot, node_compat=True).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("node_md_"):
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


def expected_lines(path: Path, keep: Callable[[str], bool]) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("node_md_") and keep(line):
            series, value = line.rsplit(" ", 1)
            out[series] = float(value)
    return out


def test_mdstat_series_equal_node_exporters_end_to_end_output():
    parsed = mdstat_parse.parse((NODE_EXPORTER / "proc" / "mdstat").read_text())
    assert parsed.warnings == ()
    ours = node_samples(Snapshot(tuple(ArrayNow(a, None) for a in parsed.arrays)))
    theirs = expected_lines(
        NODE_EXPORTER / "e2e-output-node_md.txt",
        lambda line: not line.startswith(SYSFS_SERIES),
    )
    assert len(theirs) == 187
    assert ours == theirs


def test_sysfs_series_equal_node_exporters_end_to_end_output():
    host = Host(NODE_EXPORTER / "proc", NODE_EXPORTER / "sys")
    arrays = []
    for md in sorted((NODE_EXPORTER / "sys" / "block").iterdir()):
        level = (md / "md" / "level").read_text().strip()
        # node_exporter reads sysfs apart from mdstat: give each sysfs array its level.
        array = mdstat.Array(
            md.name, "active", False, False, level, "1.2", 1, None, (), None, None, None, None, None
        )
        arrays.append(ArrayNow(array, host.read_array_sysfs(md.name)))
    ours = {
        k: v for k, v in node_samples(Snapshot(tuple(arrays))).items() if k.startswith(SYSFS_SERIES)
    }
    theirs = expected_lines(
        NODE_EXPORTER / "e2e-output-node_md.txt", lambda line: line.startswith(SYSFS_SERIES)
    )
    assert len(theirs) == 12  # md0 is raid0: no degraded file, reported as 0
    assert ours == theirs


def state_series(device: str, current: str | None) -> dict[str, float]:
    return {
        f'node_md_state{{device="{device}",state="{s}"}}': 1.0 if s == current else 0.0
        for s in ("active", "inactive", "recovering", "resync", "check")
    }


def disk_series(
    device: str, required: int, active: int, failed: int, spare: int
) -> dict[str, float]:
    return {
        f'node_md_disks_required{{device="{device}"}}': required,
        f'node_md_disks{{device="{device}",state="active"}}': active,
        f'node_md_disks{{device="{device}",state="failed"}}': failed,
        f'node_md_disks{{device="{device}",state="spare"}}': spare,
    }


def blocks_series(device: str, blocks: int, synced: int) -> dict[str, float]:
    return {
        f'node_md_blocks{{device="{device}"}}': blocks,
        f'node_md_blocks_synced{{device="{device}"}}': synced,
    }


def sysfs_series(device: str, raid_disks: int | None, degraded: int) -> dict[str, float]:
    out = {f'node_md_degraded{{device="{device}"}}': degraded}
    if raid_disks is not None:
        out[f'node_md_raid_disks{{device="{device}"}}'] = raid_disks
    return out


# Each row worked out by reading the Go code against the capture (see app/metrics/node.py).
HAND_DERIVED = {
    # procfs sets ActivityState "reshaping", which no node_md_state series reports: all 0.
    # blocks_synced is the progress line's done count (per device), raid_disks sysfs "new".
    "raid5-reshape": {
        **state_series("md0", None),
        **disk_series("md0", 4, 4, 0, 0),
        **blocks_series("md0", 520192, 2048),
        **sysfs_series("md0", 4, 0),
    },
    # "resync=DELAYED" contains "resync": resyncing, and 0 blocks synced while queued.
    "raid1-resync-and-delayed": {
        **state_series("md2", "resync"),
        **disk_series("md2", 2, 2, 0, 0),
        **blocks_series("md2", 97280, 0),
        **sysfs_series("md2", 2, 0),
        **state_series("md1", "resync"),
        **disk_series("md1", 2, 2, 0, 0),
        **blocks_series("md1", 97280, 4352),
        **sysfs_series("md1", 2, 0),
    },
    # linear counts the "[" of its members for required and active; sysfs degraded is not read
    # for linear (0); raid4's recovery: recovering, sysfs degraded 1.
    "linear-and-raid4-recovery": {
        **state_series("md4", "recovering"),
        **disk_series("md4", 3, 2, 0, 0),
        **blocks_series("md4", 520192, 1152),
        **sysfs_series("md4", 3, 1),
        **state_series("md30", "active"),
        **disk_series("md30", 2, 2, 0, 0),
        **blocks_series("md30", 522240, 522240),
        **sysfs_series("md30", 2, 0),
    },
    # inactive: 0 disks, blocks_synced = size, one (S); sysfs level and raid_disks are empty.
    "raid1-inactive": {
        **state_series("md1", "inactive"),
        **disk_series("md1", 0, 0, 0, 1),
        **blocks_series("md1", 97280, 97280),
        **sysfs_series("md1", None, 0),
    },
    "raid5-faulty-member": {
        **state_series("md0", "active"),
        **disk_series("md0", 3, 2, 1, 0),
        **blocks_series("md0", 520192, 520192),
        **sysfs_series("md0", 3, 1),
    },
    # Kernels since late 2024 print "broken" (MD_BROKEN): procfs keeps the word, which no
    # node_md_state series reports; two (F) members count as failed.
    "raid5-broken": {
        **state_series("md0", None),
        **disk_series("md0", 3, 1, 2, 0),
        **blocks_series("md0", 520192, 520192),
        **sysfs_series("md0", 3, 2),
    },
    "raid5-check": {
        **state_series("md0", "check"),
        **disk_series("md0", 3, 3, 0, 0),
        **blocks_series("md0", 520192, 3584),
        **sysfs_series("md0", 3, 0),
    },
    "raid1-pending-auto-read-only-and-read-only": {
        **state_series("md2", "resync"),
        **disk_series("md2", 2, 2, 0, 0),
        **blocks_series("md2", 97280, 0),
        **sysfs_series("md2", 2, 0),
        **state_series("md1", "resync"),
        **disk_series("md1", 2, 2, 0, 0),
        **blocks_series("md1", 97280, 0),
        **sysfs_series("md1", 2, 0),
    },
}


@pytest.mark.parametrize("state", sorted(HAND_DERIVED))
def test_kernel_captures_give_what_node_exporter_would(state):
    assert node_samples(kernel_snapshot(state)) == HAND_DERIVED[state]


def test_every_kernel_capture_has_one_state_at_most_and_synced_within_size():
    for state in KERNEL_STATES:
        for now in kernel_snapshot(state).arrays:
            array = now.array
            synced = node.blocks_synced(array)
            assert synced is not None and 0 <= synced <= (array.blocks or 0), state
            assert node.activity_state(array) in (
                "active",
                "inactive",
                "broken",
                "recovering",
                "reshaping",
                "checking",
                "resyncing",
            )


def test_off_leaves_out_every_node_series():
    snapshot = kernel_snapshot("raid5-reshape")
    text = render(snapshot, node_compat=False).decode()
    assert "node_md_" not in text
    assert "mdboost_md_sync_completed_sectors" in text
