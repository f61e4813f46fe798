"""The forecast API on the simulated box: one array's ETA with "what if I boost", and the pool."""

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.main import create_app
from app.simulator import Simulator
from app.store import db


def test_forecast_api_on_the_simulator(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=20.0)
    settings = Settings(
        proc_root=tmp_path / "tree" / "proc",
        sys_root=tmp_path / "tree" / "sys",
        db=tmp_path / "mdboost.db",
        sample_seconds=3600,  # the start-up tick only: the present then reads these 40 samples
    )
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, lambda: sim.state.sim_time)
    for _ in range(40):
        sim.advance(30)
        sampler.sample_once()
    conn.close()
    app = create_app(settings)
    app.state.clock = lambda: sim.state.sim_time
    with TestClient(app) as client:
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

    pool = client.get("/api/pool/forecast").json()
    assert pool["pool"]["status"] == "ok" and pool["pool"]["phase"] == 1
    assert pool["pool"]["eta"] == pytest.approx(fc["eta"])
