"""The demo box shows each "why is it slow" verdict through the real sampler."""

from pathlib import Path
from typing import Any

import pytest

from app.kernel.host import Host
from app.live.sampler import Sampler
from app.simulator.box import Simulator
from app.store import db


@pytest.fixture
def sim(tmp_path: Path) -> Simulator:
    sim = Simulator(tmp_path / "tree", seed=3)
    sim.state.burst_until, sim.state.next_burst = 0.0, sim.state.sim_time + 100_000
    return sim


def diagnose(sim: Simulator, tmp_path: Path, seconds: float = 120) -> dict[str, Any]:
    conn = db.connect(tmp_path / "db.sqlite")
    db.migrate(conn, Path(__file__).parents[2] / "migrations")
    host = Host(sim.root / "proc", sim.root / "sys")
    sampler = Sampler(host, conn, lambda: sim.state.sim_time)
    for _ in range(int(seconds / 5)):
        sim.advance(5)
        tick = sampler.sample_once()
    return tick.diagnoses["md2"].shape().model_dump(mode="json")


def test_a_stock_box_is_held_by_its_small_stripe_cache(sim: Simulator, tmp_path: Path) -> None:
    view = diagnose(sim, tmp_path)
    assert [v["verdict"] for v in view["verdicts"]] == ["stripe_cache", "disks_limit"]
    assert view["sentence"].startswith("md's parity memory is full: ")
    assert view["readings"]["threads_cpu"].keys() == {"md2_raid5", "md2_reshape"}


def test_boosted_it_is_at_the_disks_limit(sim: Simulator, tmp_path: Path) -> None:
    (sim.root / "sys/block/md2/md/stripe_cache_size").write_text("16384\n")
    assert diagnose(sim, tmp_path)["verdict"] == "disks_limit"


def test_a_burst_of_the_indexer_is_named(sim: Simulator, tmp_path: Path) -> None:
    (sim.root / "sys/block/md2/md/stripe_cache_size").write_text("16384\n")
    sim.state.burst_until = sim.state.sim_time + 10_000
    view = diagnose(sim, tmp_path)
    assert view["verdict"] == "yielding"
    assert view["sentence"] == (
        "Held back by other I/O on the disks: 50 % of their traffic is reads from synoindexd "
        "(sda 92 % busy). Boost raises its floor (md stops yielding below it), or pause what "
        "competes."
    )


def test_a_slow_member(sim: Simulator, tmp_path: Path) -> None:
    sim.slow("sdc")
    view = diagnose(sim, tmp_path)
    assert view["verdict"] == "slow_member"
    assert view["verdicts"][0]["numbers"]["disk"] == "sdc"
    sim.slow(None)
    assert sim.slow_disk is None


def test_a_low_local_max(sim: Simulator, tmp_path: Path) -> None:
    (sim.root / "sys/block/md2/md/sync_speed_max").write_text("3000\n")
    assert diagnose(sim, tmp_path)["verdict"] == "held_by_max"


def test_the_verdict_beside_the_first_gives_no_advice(sim: Simulator, tmp_path: Path) -> None:
    view = diagnose(sim, tmp_path)
    first, also = view["verdicts"]
    assert first["sentence"].endswith("(up to 128x this one fits in memory).")
    assert also["finding"] == also["sentence"].removesuffix(
        " Nothing to tune: this is about as fast as these disks go."
    )
