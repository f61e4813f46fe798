from pathlib import Path

import pytest

from app.kernel import mdstat_parse
from app.simulator.box import Simulator
from app.simulator.layout import cache_speed_mb_s


def mb_s(kb_s: float) -> float:
    return kb_s * 1024 / 1e6


def steady_speed(sim: Simulator, seconds: float = 600) -> float:
    """Average MB/s over `seconds` of simulated time outside competing-I/O bursts."""
    sim.state.burst_until, sim.state.next_burst = 0.0, sim.state.sim_time + 10 * seconds
    start = sim.state.done_blocks
    sim.advance(seconds)
    return mb_s((sim.state.done_blocks - start) / seconds)


def test_the_seed_figures_of_the_speed_model():
    assert cache_speed_mb_s(256) == pytest.approx(6.0)
    assert cache_speed_mb_s(16384) == pytest.approx(30.0)
    assert cache_speed_mb_s(32768) < cache_speed_mb_s(16384)
    assert cache_speed_mb_s(4096) / cache_speed_mb_s(256) == pytest.approx(4.0)


def test_the_tree_is_a_kernel_tree_that_parses(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3)
    sim.advance(120)
    parsed = mdstat_parse.parse((tmp_path / "proc/mdstat").read_text())
    assert parsed.warnings == ()
    md2 = parsed.array("md2")
    assert md2 is not None and md2.sync is not None and md2.sync.action == "reshape"
    assert md2.sync.speed_kb_s is not None and 4000 < md2.sync.speed_kb_s < 8000
    assert (tmp_path / "sys/block/md2/md/raid_disks").read_text() == "4 (3)\n"
    assert (tmp_path / "sys/block/md2/md/sync_speed_min").read_text() == "10000 (system)\n"
    assert not (tmp_path / "sys/block/md0/md/stripe_cache_size").exists()


def test_the_stripe_cache_in_the_tree_changes_the_speed(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3)
    stock = steady_speed(sim)
    (tmp_path / "sys/block/md2/md/stripe_cache_size").write_text("16384\n")
    boosted = steady_speed(sim)
    assert 5.0 < stock < 7.0
    assert 27.0 < boosted < 33.0


def test_competing_io_holds_the_sync_at_speed_limit_min(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3)
    (tmp_path / "sys/block/md2/md/stripe_cache_size").write_text("16384\n")
    sim.state.burst_until = sim.state.sim_time + 10_000
    sim.state.next_burst = sim.state.burst_until + 10_000
    start = sim.state.done_blocks
    sim.advance(300)
    assert (sim.state.done_blocks - start) / 300 == pytest.approx(10000, rel=0.01)
    (tmp_path / "sys/block/md2/md/sync_speed_min").write_text("50000\n")
    start = sim.state.done_blocks
    sim.advance(300)
    assert mb_s((sim.state.done_blocks - start) / 300) > 20  # no longer held back
    assert (tmp_path / "sys/block/md2/md/sync_speed_min").read_text() == "50000 (local)\n"
    (tmp_path / "sys/block/md2/md/sync_speed_min").write_text("system\n")
    sim.advance(3)
    assert (tmp_path / "sys/block/md2/md/sync_speed_min").read_text() == "10000 (system)\n"


def test_the_reshape_finishes_and_the_array_grows(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3, start_percent=99.99)
    sim.advance(3600)
    md2 = mdstat_parse.parse((tmp_path / "proc/mdstat").read_text()).array("md2")
    assert md2 is not None and md2.sync is None and md2.blocks == 1953494784 * 3
    assert (tmp_path / "sys/block/md2/md/sync_action").read_text() == "idle\n"
    # md raises read-ahead to two stripes of the new geometry when the grow is done.
    assert (tmp_path / "sys/block/md2/queue/read_ahead_kb").read_text() == "384\n"


def test_a_restarted_simulator_continues_where_it_was(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3)
    sim.advance(600)
    again = Simulator(tmp_path, seed=99)
    assert again.state == sim.state


def test_an_shr_expansion_reshapes_md2_then_md3(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3, start_percent=99.99)
    sim.advance(600)
    parsed = mdstat_parse.parse((tmp_path / "proc/mdstat").read_text())
    md2, md3 = parsed.array("md2"), parsed.array("md3")
    assert md2 is not None and md2.sync is None and md2.blocks == 1953494784 * 3
    assert md3 is not None and md3.level == "raid5" and md3.sync is not None
    assert md3.sync.action == "reshape" and [d.name for d in md3.devices] == [
        "sda6",
        "sdb6",
        "sdd6",
    ]
    assert (tmp_path / "sys/block/md3/md/raid_disks").read_text() == "3 (2)\n"
    assert (tmp_path / "sys/block/md2/md/sync_action").read_text() == "idle\n"
    sim.advance(10 * 86400)
    md3 = mdstat_parse.parse((tmp_path / "proc/mdstat").read_text()).array("md3")
    assert md3 is not None and md3.sync is None and md3.blocks == 976_758_848 * 2
    assert (tmp_path / "sys/block/md3/md/sync_action").read_text() == "idle\n"


def test_without_expansion_md3_stays_an_idle_raid1(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3, start_percent=99.99, expansion=False)
    sim.advance(600)
    md3 = mdstat_parse.parse((tmp_path / "proc/mdstat").read_text()).array("md3")
    assert md3 is not None and md3.level == "raid1" and md3.sync is None


def test_frozen_disks_make_no_progress_until_thawed(tmp_path: Path):
    sim = Simulator(tmp_path, seed=3)
    sim.freeze()
    start = sim.state.done_blocks
    sim.advance(600)
    assert sim.state.done_blocks == start
    assert "speed=0K/sec" in (tmp_path / "proc/mdstat").read_text()
    sim.freeze(False)
    sim.advance(60)
    assert sim.state.done_blocks > start
