"""node_exporter's md series, same names, labels, help and values (MDBOOST_METRICS_NODE_COMPAT).

Derived from node_exporter collector/mdadm_linux.go (v1.10+) and the procfs v0.21 parsers it
calls, mdstat.go parseMDStat() and sysfs/mdraid.go Mdraids(), so a dashboard built for
node_exporter shows a box that runs mdboost instead. Their quirks are kept on purpose:
- node_md_state has no "reshaping" series: during a reshape every one of its series reads 0, and
  so for a "broken" array (procfs keeps the header's word);
  "resync=DELAYED" and "resync=PENDING" count as resync whatever the queued job is;
- node_md_blocks_synced is the size in blocks when idle, 0 while queued, and the progress line's
  done count while syncing (per member device for recovery and reshape, as md prints it);
- raid0 and linear count their listed members as both required and active; inactive arrays 0;
- node_md_raid_disks is sysfs raid_disks ("new" during a reshape); node_md_degraded is sysfs
  degraded for raid1/4/5/6/10 and 0 for other levels.
Where procfs refuses a whole mdstat (a line it cannot parse), node_exporter exports no md series
at all; mdboost's parser matches lines by content and exports what it read.
"""

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from app.live.snapshot import ArrayNow
from app.md.mdstat import Array

# procfs ActivityState -> node_md_state's state label; "reshaping" has no series (see above).
_STATE_LABELS = {
    "active": "active",
    "inactive": "inactive",
    "recovering": "recovering",
    "resyncing": "resync",
    "checking": "check",
}
# sysfs/mdraid.go reads `degraded` only for these levels; the others report 0.
_LEVELS_WITH_DEGRADED = frozenset({"raid1", "raid4", "raid5", "raid6", "raid10"})


def activity_state(array: Array) -> str:
    """procfs's ActivityState: the header's state word, replaced by the sync line's action."""
    sync = array.sync
    if sync is None:
        return array.state
    if sync.action == "recovery":
        return "recovering"
    if sync.action == "reshape":
        return "reshaping"
    if sync.action == "check":
        return "checking"
    return "resyncing"  # resync, and the "resync=DELAYED" / "resync=PENDING" lines


def disks(array: Array) -> tuple[int, int] | None:
    """(required, active) as procfs evalStatusLine() counts them; None where it would fail."""
    if array.level in ("raid0", "linear"):
        return len(array.devices), len(array.devices)
    if array.state == "inactive":
        return 0, 0
    if array.raid_disks is None or array.active_disks is None:
        return None
    return array.raid_disks, array.active_disks


def blocks_synced(array: Array) -> int | None:
    sync = array.sync
    if sync is None:
        return array.blocks
    if not sync.running:
        return 0
    return sync.done_blocks


def families(arrays: tuple[ArrayNow, ...]) -> Iterator[Metric]:
    state = GaugeMetricFamily(
        "node_md_state", "Indicates the state of md-device.", labels=["device", "state"]
    )
    disk_count = GaugeMetricFamily(
        "node_md_disks",
        "Number of active/failed/spare disks of device.",
        labels=["device", "state"],
    )
    required = GaugeMetricFamily(
        "node_md_disks_required", "Total number of disks of device.", labels=["device"]
    )
    blocks = GaugeMetricFamily(
        "node_md_blocks", "Total number of blocks on device.", labels=["device"]
    )
    synced = GaugeMetricFamily(
        "node_md_blocks_synced", "Number of blocks synced on device.", labels=["device"]
    )
    raid_disks = GaugeMetricFamily(
        "node_md_raid_disks", "Number of raid disks on device.", labels=["device"]
    )
    degraded = GaugeMetricFamily(
        "node_md_degraded", "Number of degraded disks on device.", labels=["device"]
    )
    for now in arrays:
        array = now.array
        name = array.name
        counted = disks(array)
        if counted is not None and array.blocks is not None:
            disks_required, disks_active = counted
            required.add_metric([name], disks_required)
            disk_count.add_metric([name, "active"], disks_active)
            disk_count.add_metric([name, "failed"], sum("F" in d.flags for d in array.devices))
            disk_count.add_metric([name, "spare"], sum("S" in d.flags for d in array.devices))
            current = activity_state(array)
            for procfs_state, label in _STATE_LABELS.items():
                state.add_metric([name, label], 1.0 if current == procfs_state else 0.0)
            blocks.add_metric([name], array.blocks)
            done = blocks_synced(array)
            if done is not None:
                synced.add_metric([name], done)
        sysfs = now.sysfs
        if sysfs is None:
            continue
        if sysfs.raid_disks is not None:
            raid_disks.add_metric([name], sysfs.raid_disks[0])
        if array.level not in _LEVELS_WITH_DEGRADED:
            degraded.add_metric([name], 0)
        elif sysfs.degraded is not None:
            degraded.add_metric([name], sysfs.degraded)
    yield from (required, disk_count, state, blocks, synced, raid_disks, degraded)
