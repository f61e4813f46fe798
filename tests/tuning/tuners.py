"""A Tuner over a temporary kernel tree and database, with a clock the test moves."""

from pathlib import Path

from app.config import Settings
from app.kernel.host import ARRAY_NAME, Host
from app.live import array_view
from app.live.snapshot_builder import SnapshotBuilder
from app.live.tick import Tick
from app.store import db
from app.tuning import view as tuning_view
from app.tuning.planning import presets
from app.tuning.tuner import Tuner
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def make_tuner(
    tree: KernelTree, tmp_path: Path, clock: Clock | None = None, **settings: object
) -> Tuner:
    """Presets from presets/ plus any *.toml in tmp_path (the data directory)."""
    config = Settings(
        **{
            "proc_root": tree.proc,
            "sys_root": tree.sys,
            "db": tmp_path / "mdboost.db",
            "max_cache_mb": 1024,
            **settings,
        }
    )
    conn = db.connect(config.db)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    found, errors = presets.load_all(config.presets_dir, config.data_dir)
    return Tuner(Host(tree.proc, tree.sys), conn, clock or Clock(), config, found, errors)


def user_preset(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.toml").write_text(body)


def status(tuner: Tuner) -> dict:
    """GET /api/tuning's answer after a sampler tick: what the kernel holds comes from the
    present that tick left, what is tuned from the tuner's publishing into it; this tick reads
    the kernel and stores nothing."""
    parsed = array_view.current(tuner.host)
    tick = Tick(
        parsed=parsed,
        ts=tuner.clock(),
        sysfs={
            a.name: tuner.host.read_array_sysfs(a.name)
            for a in parsed.arrays
            if ARRAY_NAME.fullmatch(a.name)
        },
        global_limits=tuner.host.read_global_speed_limits(),
    )
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn)
    tuner.attach(snapshot_builder)
    snapshot_builder.update(tick)
    # As the tuner's own tick ends: what is tuned, into the present, unless an apply holds the
    # lock (the tick skips it then, and the apply publishes as it ends).
    if tuner.lock.acquire(blocking=False):
        try:
            tuner.publish_tuned()
        finally:
            tuner.lock.release()
    body = tuning_view.status(tuner, tuner.conn, snapshot_builder.snapshot)
    return body.model_dump(mode="json", by_alias=True)
