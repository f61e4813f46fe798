"""mdboost's own series on captured kernel trees and built snapshots; promtool on the output."""

from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.forecast.model import Forecast
from app.forecast.pool import PoolForecast, PoolMember
from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.snapshot import ArrayNow, Job, KnobNow, MemberIO, Snapshot
from app.metrics.exposition import render
from app.shapes.tuning import TuningState
from tests.kernel_tree import KernelTree, mdstat_text, raid1, raid5
from tests.metrics.snapshots import KERNEL_STATES, kernel_snapshot
from tests.present import array_now

BOOSTED = TuningState(kind="boost", preset="boost", label="Boosted", detail=None)

KIB = 1024


def samples(snapshot: Snapshot, node_compat: bool = False) -> dict[str, float]:
    text = render(snapshot, node_compat=node_compat).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return out


def of_device(found: dict[str, float], device: str) -> dict[str, float]:
    return {k: v for k, v in found.items() if f'device="{device}"' in k}


def test_reshape_capture_in_base_units():
    found = of_device(samples(kernel_snapshot("raid5-reshape")), "md0")
    # mdstat: reshape = 0.7% (2048/260096) finish=2.0min speed=2048K/sec; sysfs: 1000 (system),
    # stripe_cache_size 513 (mdadm raised it), stripe_cache_active 0, mismatch_cnt 0.
    assert found == {
        'mdboost_md_info{device="md0",level="raid5",role="data"}': 1,
        **{
            f'mdboost_md_sync_action{{action="{a}",device="md0"}}': float(a == "reshape")
            for a in (
                "idle",
                "resync",
                "recovery",
                "check",
                "repair",
                "reshape",
                "delayed",
                "pending",
            )
        },
        'mdboost_md_sync_completed_sectors{device="md0"}': 4096,
        'mdboost_md_sync_total_sectors{device="md0"}': 520192,
        'mdboost_md_sync_speed_bytes_per_second{device="md0"}': 2048 * KIB,
        'mdboost_md_kernel_remaining_seconds{device="md0"}': 120,
        'mdboost_md_speed_limit_min_bytes_per_second{device="md0",source="system"}': 1000 * KIB,
        'mdboost_md_speed_limit_max_bytes_per_second{device="md0",source="system"}': 1000 * KIB,
        'mdboost_md_degraded_disks{device="md0"}': 0,
        'mdboost_md_failed{device="md0"}': 0,
        'mdboost_md_mismatch_sectors{device="md0"}': 0,
        'mdboost_md_stripe_cache_size{device="md0"}': 513,
        'mdboost_md_stripe_cache_active{device="md0"}': 0,
    }


@pytest.mark.parametrize(
    ("state", "device", "action"),
    [
        ("raid5-clean", "md0", "idle"),
        ("raid5-check", "md0", "check"),
        ("raid5-recovery-readd", "md0", "recovery"),
        ("raid6-resync", "md6", "resync"),
        ("raid1-resync-and-delayed", "md2", "delayed"),
        ("raid1-pending-auto-read-only-and-read-only", "md1", "pending"),
        ("raid1-inactive", "md1", "idle"),
    ],
)
def test_one_action_is_1_the_others_0(state, device, action):
    found = of_device(samples(kernel_snapshot(state)), device)
    actions = {k: v for k, v in found.items() if k.startswith("mdboost_md_sync_action")}
    assert len(actions) == 8
    assert [k for k, v in actions.items() if v == 1] == [
        f'mdboost_md_sync_action{{action="{action}",device="{device}"}}'
    ]
    running = action not in ("idle", "delayed", "pending")
    assert (f'mdboost_md_sync_completed_sectors{{device="{device}"}}' in found) == running


def test_degraded_and_local_limits(tree: KernelTree):
    tree.mdstat(mdstat_text(raid5(status="UUU_"), raid1()))
    tree.md("md2", degraded="1", sync_speed_max="50000 (local)", mismatch_cnt="8")
    tree.md("md0")
    found = samples(snapshot_of(tree))
    assert found['mdboost_md_degraded_disks{device="md2"}'] == 1
    assert found['mdboost_md_failed{device="md2"}'] == 0  # one missing of four: degraded only
    assert found['mdboost_md_speed_limit_max_bytes_per_second{device="md2",source="local"}'] == (
        50000 * KIB
    )
    assert found['mdboost_md_speed_limit_min_bytes_per_second{device="md2",source="system"}'] == (
        1000 * KIB
    )
    assert found['mdboost_md_mismatch_sectors{device="md2"}'] == 8


def test_kernels_without_per_array_limits_follow_the_global_ones(tree: KernelTree):
    tree.mdstat(mdstat_text(raid1()))
    host = Host(tree.proc, tree.sys)
    array = mdstat_parse.parse(host.read_mdstat() or "").arrays[0]
    snapshot = Snapshot((array_now(array, host.read_array_sysfs("md0")),), 10000, 200000)
    found = samples(snapshot)
    assert found['mdboost_md_speed_limit_min_bytes_per_second{device="md0",source="system"}'] == (
        10000 * KIB
    )
    assert 'mdboost_md_stripe_cache_size{device="md0"}' not in found  # raid1 has none


def test_repair_is_told_apart_from_resync(tree: KernelTree):
    tree.mdstat(
        mdstat_text(raid5(progress="[>....]  resync =  1.0% (10/1000) finish=1.0min speed=10K/sec"))
    )
    tree.md("md2", sync_action="repair")
    found = samples(snapshot_of(tree))
    assert found['mdboost_md_sync_action{action="repair",device="md2"}'] == 1
    assert found['mdboost_md_sync_action{action="resync",device="md2"}'] == 0


def snapshot_of(tree: KernelTree, **fields: object) -> Snapshot:
    host = Host(tree.proc, tree.sys)
    parsed = mdstat_parse.parse(host.read_mdstat() or "")
    arrays = tuple(array_now(a, host.read_array_sysfs(a.name)) for a in parsed.arrays)
    return Snapshot(arrays, *host.read_global_speed_limits(), **fields)  # type: ignore[arg-type]


def reshaping(**fields: object) -> ArrayNow:
    array = kernel_snapshot("raid5-reshape").arrays[0]
    return array_now(array.array, array.sysfs, **fields)


def test_forecast_bounds_only_when_there_is_a_number():
    ok = Forecast("ok", eta=2000.0, low=1500.0, high=3000.0, as_of=1000.0)
    found = samples(Snapshot((reshaping(forecast=ok),)))
    assert {k: v for k, v in found.items() if "forecast" in k} == {
        'mdboost_md_forecast_finish_timestamp_seconds{bound="low",device="md0"}': 1500,
        'mdboost_md_forecast_finish_timestamp_seconds{bound="mid",device="md0"}': 2000,
        'mdboost_md_forecast_finish_timestamp_seconds{bound="high",device="md0"}': 3000,
    }
    young = Forecast("insufficient", "2 sample(s); need 6")
    assert not [k for k in samples(Snapshot((reshaping(forecast=young),))) if "forecast" in k]


def two_phases(forecast: PoolForecast) -> Job:
    return Job((PoolMember("md2", "running"), PoolMember("md3", "coming")), forecast)


def test_pool_job_phase_and_finish():
    pool = PoolForecast("ok", eta=9000.0, low=8000.0, high=12000.0, phase=2, phases=3)
    found = samples(Snapshot(job=two_phases(pool)))
    assert found["mdboost_pool_phase"] == 2 and found["mdboost_pool_phases"] == 3
    assert found['mdboost_pool_forecast_finish_timestamp_seconds{bound="high"}'] == 12000
    waiting = PoolForecast("insufficient", "md2: 1 sample(s); need 6", phase=1, phases=2)
    found = samples(Snapshot(job=two_phases(waiting)))
    assert found["mdboost_pool_phase"] == 1
    assert not [k for k in found if k.startswith("mdboost_pool_forecast")]
    assert not [k for k in samples(Snapshot()) if k.startswith("mdboost_pool")]


def test_tuning_preset_knobs_in_base_units_and_drift():
    knobs = (
        KnobNow(
            "stripe_cache_size@md2",
            "stripe_cache_size",
            "md2",
            "entries",
            "256",
            "16384",
            "16384",
            False,
        ),
        KnobNow(
            "sync_speed_min@md2", "sync_speed_min", "md2", "KiB/s", "system", "50000", "20000", True
        ),
        KnobNow(
            "sync_speed_max@md2",
            "sync_speed_max",
            "md2",
            "KiB/s",
            "system",
            "system",
            "system",
            False,
        ),
        KnobNow("read_ahead_kb@md2", "read_ahead_kb", "md2", "KiB", "384", "32768", None, False),
        KnobNow(
            "speed_limit_min", "speed_limit_min", None, "KiB/s", "1000", "50000", "50000", False
        ),
    )
    found = samples(
        Snapshot(preset="boost", session_started=1234.5, knobs=knobs, job=Job(tuned=BOOSTED))
    )
    assert found["mdboost_tuning_active"] == 1
    assert found['mdboost_tuning_state_info{state="boost"}'] == 1
    assert 'mdboost_tuning_state_info{state="off"}' not in found
    assert found['mdboost_tuning_preset_info{preset="boost"}'] == 1
    assert found["mdboost_tuning_session_start_timestamp_seconds"] == 1234.5
    tuned = {k: v for k, v in found.items() if k.startswith("mdboost_tuning_knob")}
    assert tuned == {
        'mdboost_tuning_knob_value{knob="stripe_cache_size",target="md2",unit="entries"}': 16384,
        'mdboost_tuning_knob_desired{knob="stripe_cache_size",target="md2",unit="entries"}': 16384,
        'mdboost_tuning_knob_value{knob="sync_speed_min",target="md2",unit="bytes_per_second"}': 20000
        * KIB,
        'mdboost_tuning_knob_desired{knob="sync_speed_min",target="md2",unit="bytes_per_second"}': 50000
        * KIB,
        'mdboost_tuning_knob_desired{knob="read_ahead_kb",target="md2",unit="bytes"}': 32768 * KIB,
        'mdboost_tuning_knob_value{knob="speed_limit_min",target="",unit="bytes_per_second"}': 50000
        * KIB,
        'mdboost_tuning_knob_desired{knob="speed_limit_min",target="",unit="bytes_per_second"}': 50000
        * KIB,
        'mdboost_tuning_knob_drift{knob="stripe_cache_size",target="md2"}': 0,
        'mdboost_tuning_knob_drift{knob="sync_speed_min",target="md2"}': 1,
        'mdboost_tuning_knob_drift{knob="sync_speed_max",target="md2"}': 0,
        'mdboost_tuning_knob_drift{knob="read_ahead_kb",target="md2"}': 0,
        'mdboost_tuning_knob_drift{knob="speed_limit_min",target=""}': 0,
    }
    idle = samples(Snapshot())
    assert idle["mdboost_tuning_active"] == 0
    assert not [k for k in idle if k.startswith(("mdboost_tuning_preset", "mdboost_tuning_knob"))]


def test_member_io_when_the_sampler_has_it():
    members = (MemberIO("sda5", 0.92, 0.018), MemberIO("sdb5", 0.31, 0.004))
    found = samples(Snapshot((reshaping(members=members),)))
    assert found['mdboost_md_member_busy_ratio{device="md0",member="sda5"}'] == 0.92
    assert found['mdboost_md_member_wait_seconds{device="md0",member="sdb5"}'] == 0.004


def test_a_vanished_array_leaves_no_series():
    both = kernel_snapshot("raid1-resync-and-delayed")
    assert of_device(samples(both, node_compat=True), "md2")
    only_md1 = Snapshot(tuple(a for a in both.arrays if a.array.name == "md1"))
    assert not of_device(samples(only_md1, node_compat=True), "md2")


def test_sampler_timestamp_and_every_family_has_help():
    text = render(Snapshot(last_success=1700000000.5), node_compat=True).decode()
    families = list(text_string_to_metric_families(text))
    assert all(f.documentation for f in families)
    assert (
        samples(Snapshot(last_success=1700000000.5))[
            "mdboost_sampler_last_success_timestamp_seconds"
        ]
        == 1700000000.5
    )


def full_snapshot() -> Snapshot:
    """Every family with samples: a reshape with a forecast and members, a pool, a boost."""
    ok = Forecast("ok", eta=2000.0, low=1500.0, high=3000.0, as_of=1000.0)
    members = (MemberIO("vda", 0.5, 0.01),)
    return Snapshot(
        (reshaping(forecast=ok, members=members), *kernel_snapshot("raid5-degraded").arrays),
        last_success=1000.0,
        job=replace(
            two_phases(PoolForecast("ok", eta=9000.0, low=8000.0, high=12000.0, phase=1, phases=2)),
            tuned=BOOSTED,
        ),
        preset="boost",
        session_started=900.0,
        knobs=(
            KnobNow(
                "stripe_cache_size@md0",
                "stripe_cache_size",
                "md0",
                "entries",
                "256",
                "16384",
                "4096",
                True,
            ),
        ),
    )


def test_promtool_accepts_every_output(prometheus_tools):
    snapshots = [full_snapshot(), Snapshot()]
    snapshots += [kernel_snapshot(state) for state in KERNEL_STATES]
    for snapshot in snapshots:
        for node_compat in (True, False):
            output = prometheus_tools.check(
                "check", "metrics", stdin=render(snapshot, node_compat=node_compat)
            )
            assert output.strip() == "", output  # no lint complaint either


def test_failed_from_the_counts_while_sysfs_says_write_pending(tree: KernelTree):
    """A RAID5 with two of three members gone is failed in /metrics too, during the
    seconds 6.1 and 6.12 show array_state write-pending, and for a raid0 whose disk vanished."""
    tree.mdstat(
        mdstat_text(
            "md0 : active raid5 vdc[2](F) vdb[1](F) vda[0]\n"
            "      520192 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/1] [U__]\n",
            "md1 : active raid0 vde[1] vdd[0]\n      1046528 blocks super 1.2 64k chunks\n",
        )
    )
    tree.md("md0", array_state="write-pending", degraded="2")
    tree.md("md1", array_state="broken")
    found = samples(snapshot_of(tree))
    assert found['mdboost_md_failed{device="md0"}'] == 1
    assert found['mdboost_md_failed{device="md1"}'] == 1
