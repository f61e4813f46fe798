"""The forecast API on the simulated box: one array's ETA with "what if I boost", and the pool."""

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.main import create_app
from app.simulator import Simulator
from app.store import db


def simulated_box(tmp_path: Path, sim: Simulator) -> tuple[Settings, sqlite3.Connection]:
    """Settings over the simulator's tree and a migrated database; the app's own tick runs once
    an hour, so the present reads the samples a test took."""
    settings = Settings(
        proc_root=tmp_path / "tree" / "proc",
        sys_root=tmp_path / "tree" / "sys",
        db=tmp_path / "mdboost.db",
        sample_seconds=3600,  # the start-up tick only: the present then reads these samples
    )
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    return settings, conn


def sample(
    settings: Settings, conn: sqlite3.Connection, sim: Simulator, sampler: Sampler | None = None
) -> None:
    """40 samples 30 s apart, then the connection closes (the app opens its own)."""
    sampler = sampler or Sampler(
        Host(settings.proc_root, settings.sys_root), conn, lambda: sim.state.sim_time
    )
    for _ in range(40):
        sim.advance(30)
        sampler.sample_once()
    conn.close()


def served(settings: Settings, sim: Simulator) -> TestClient:
    app = create_app(settings)
    app.state.clock = lambda: sim.state.sim_time
    return TestClient(app)


def test_forecast_api_on_the_simulator(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=20.0)
    settings, conn = simulated_box(tmp_path, sim)
    sample(settings, conn, sim)
    with served(settings, sim) as client:
        check_forecasts(client, sim)


def check_forecasts(client: TestClient, sim: Simulator) -> None:
    body = client.get("/api/arrays/md2/forecast").json()
    fc = body["forecast"]
    assert body["action"] == "reshape" and fc["status"] == "ok"
    assert fc["knee"] == pytest.approx(2 / 3)
    assert fc["low"] < fc["eta"] < fc["high"]
    assert body["now"] == sim.state.sim_time
    assert body["eta_in_s"] == pytest.approx(fc["eta"] - sim.state.sim_time)
    assert body["boost"]["source"] == "model" and body["boost"]["label"] == "estimate"

    idle = client.get("/api/arrays/md3/forecast").json()
    assert idle["forecast"]["status"] == "insufficient" and idle["forecast"]["eta"] is None
    assert client.get("/api/arrays/md9/forecast").status_code == 404

    # md3 reshapes once md2 is done (sdd reaches its tier): the job counts it while md2 runs
    pool = client.get("/api/pool/forecast").json()
    assert pool["pool"]["status"] == "ok" and (pool["pool"]["phase"], pool["pool"]["phases"]) == (
        1,
        2,
    )
    assert [(a["name"], a["state"]) for a in pool["arrays"]] == [
        ("md2", "running"),
        ("md3", "coming"),
    ]
    md2, md3 = pool["pool"]["finishes"]
    assert md2["eta"] == pytest.approx(fc["eta"])
    assert pool["pool"]["eta"] == pytest.approx(md3["eta"]) and md3["eta"] > fc["eta"]
    page = client.get("/").text
    assert "Phase <strong>1 of 2</strong>" in page and "md3 next" in page


def test_md3_of_an_shr_expansion_is_offered_md2s_measured_boost(tmp_path: Path) -> None:
    """md3 sits on the same disks as md2, so md2's measured x5.2 is md3's best
    estimate, not the model's x1.4."""
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=90.0)
    settings, conn = simulated_box(tmp_path, sim)
    t = sim.state.sim_time
    with conn:  # a boost of md2 that was applied, measured at x5.2, and reverted
        conn.execute(
            "INSERT INTO tuning_sessions (id, started, preset, arrays, ended, end_reason) "
            "VALUES (1, ?, 'boost', '[\"md2\"]', ?, 'requested')",
            (t, t + 600),
        )
        conn.execute(
            "INSERT INTO tuning_ops (id, session_id, kind, preset, started, finished, state) "
            "VALUES (1, 1, 'apply', 'boost', ?, ?, 'done')",
            (t, t),
        )
        conn.execute(
            "INSERT INTO tuning_effects (op_id, array, preset, applied_at, before_kb_s, "
            "after_kb_s, ratio, measured_at) VALUES (1, 'md2', 'boost', ?, 6000, 31200, 5.2, ?)",
            (t, t + 300),
        )
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, lambda: sim.state.sim_time)
    while sim.reshaping != "md3" or sim.state.done_blocks < 0.1 * sim.total_blocks:
        sim.advance(600)
        sampler.sample_once()
    sample(settings, conn, sim, sampler)
    with served(settings, sim) as client:
        md3 = client.get("/api/arrays/md3/forecast").json()
    assert md3["forecast"]["status"] == "ok"
    assert md3["boost"]["source"] == "measured" and md3["boost"]["ratio"] == pytest.approx(5.2)
    assert md3["boost"]["why"] == "it measured ×5.2 on md2, on the same disks"


def test_a_boost_measured_only_over_auto_tune_is_named_not_called_unmeasured(
    tmp_path: Path,
) -> None:
    """Boost measured ×1.3 on top of auto-tune says nothing of its gain over the
    untuned pace, so the estimate stays the model's; but it says what was measured here instead
    of "boost has not been measured on this box"."""
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=20.0)
    settings, conn = simulated_box(tmp_path, sim)
    t = sim.state.sim_time
    with conn:  # auto-tune, then boost over it (measured x1.3), all reverted
        conn.execute(
            "INSERT INTO tuning_sessions (id, started, preset, arrays, ended, end_reason) "
            "VALUES (1, ?, 'auto-tune', '[\"md2\"]', ?, 'requested')",
            (t, t + 600),
        )
        conn.execute(
            "INSERT INTO tuning_ops (id, session_id, kind, preset, started, finished, state) "
            "VALUES (1, 1, 'apply', 'auto-tune', ?, ?, 'done'), "
            "(2, 1, 'apply', 'boost', ?, ?, 'done')",
            (t, t, t + 100, t + 100),
        )
        conn.execute(
            "INSERT INTO tuning_effects (op_id, array, preset, applied_at, before_kb_s, "
            "after_kb_s, ratio, measured_at) VALUES (2, 'md2', 'boost', ?, 20000, 26000, 1.3, ?)",
            (t + 100, t + 400),
        )
    sample(settings, conn, sim)
    with served(settings, sim) as client:
        md2 = client.get("/api/arrays/md2/forecast").json()
    assert md2["boost"]["source"] == "model", md2["boost"]
    assert md2["boost"]["why"].endswith(
        "; boost measured ×1.3 on md2 over settings already tuned, not over the untuned pace"
    ), md2["boost"]["why"]
