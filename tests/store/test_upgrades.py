"""Upgrades never lose history: a database made at every earlier schema version, built
from the migrations as they stood (forward-only: each file is unchanged since it landed), holding
a month's kind of data, migrates to today's schema with every row and every value it had.
The last test upgrades the previous schema under the real server and reads it over HTTP."""

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from app.store import db, rollup
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, idle_box
from tests.server import tree_server

MIGRATIONS = sorted((PROJECT_ROOT / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"))
START = 1_700_000_000.0
RESHAPE_TOTAL = 1_953_494_784
TOKEN = "mdb_upgrade-test-token"


def schema_at(version: int, tmp_path: Path) -> sqlite3.Connection:
    """The file an mdboost with the first `version` migrations made: SQLite's defaults."""
    then = tmp_path / f"migrations-{version}"
    then.mkdir()
    for script in MIGRATIONS[:version]:
        shutil.copy(script, then)
    conn = sqlite3.connect(tmp_path / "mdboost.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    assert [Path(name).name for name in db.migrate(conn, then)] == [
        s.name for s in MIGRATIONS[:version]
    ]
    return conn


def a_month(now: float = START) -> dict[str, list[dict[str, Any]]]:
    """What a box writes over weeks: a finished check, a running reshape sampled every 5 s,
    idle samples, a boost with its journal and measured effect, a login, tokens, destinations."""
    samples = [
        {
            "ts": now + i * 60.0,
            "array": "md0",
            "state": "active",
            "status": "UU",
            "degraded": 0,
            "mismatch_cnt": 0,
        }
        for i in range(600)
    ]
    samples += [
        {
            "ts": now + 3600 + i * 5.0,
            "array": "md2",
            "run_id": 1,
            "state": "active",
            "status": "UUUU",
            "degraded": 0,
            "action": "check",
            "percent": round(i / 7.2, 1),
            "done_blocks": i * 2_000_000,
            "total_blocks": 1_440_000_000,
            "speed_kb_s": 400_000,
            "finish_min": round((720 - i) / 12, 1),
            "sync_speed_kb_s": 400_000,
            "mismatch_cnt": 0,
            "stripe_cache_size": 256,
            "speed_min_kb_s": 1000,
            "speed_max_kb_s": 200_000,
        }
        for i in range(720)
    ]
    samples += [
        {
            "ts": now + 86400 + i * 5.0,
            "array": "md2",
            "run_id": 2,
            "state": "active",
            "status": "UUUU",
            "degraded": 0,
            "action": "reshape",
            "percent": round(i / 100, 1),
            "done_blocks": i * 30_000,
            "total_blocks": RESHAPE_TOTAL,
            "speed_kb_s": 6000 if i < 600 else 24_000,
            "finish_min": 3000.0,
            "sync_speed_kb_s": 6100,
            "mismatch_cnt": 0,
            "stripe_cache_size": 256 if i < 600 else 4096,
            "speed_min_kb_s": 10_000,
            "speed_max_kb_s": 200_000,
        }
        for i in range(1440)
    ]
    boost_at = now + 86400 + 3000
    return {
        "runs": [
            {
                "id": 1,
                "array": "md2",
                "action": "check",
                "started": now + 3600,
                "finished": now + 7200,
                "outcome": "completed",
                "total_blocks": 1_440_000_000,
                "speed_samples": 720,  # the run summary as the sampler kept it (0012)
                "speed_sum_kb_s": 720 * 400_000,
                "last_percent": 99.9,
            },
            {
                "id": 2,
                "array": "md2",
                "action": "reshape",
                "started": now + 86400,
                "outcome": "running",
                "total_blocks": RESHAPE_TOTAL,
                "speed_samples": 1440,
                "speed_sum_kb_s": 600 * 6000 + 840 * 24_000,
                "last_percent": 14.4,
            },
        ],
        "samples": samples,
        "events": [
            {
                "ts": boost_at,
                "array": "md2",
                "run_id": 2,
                "kind": "apply",
                "detail": '{"preset": "boost"}',
            },
        ],
        "tuning_sessions": [
            {"id": 1, "started": boost_at, "preset": "boost", "arrays": '["md2"]'},
        ],
        "tuning_knobs": [
            {
                "session_id": 1,
                "key": "stripe_cache_size@md2",
                "knob": "stripe_cache_size",
                "target": "md2",
                "original": "256",
                "desired": "4096",
            },
        ],
        "tuning_ops": [
            {
                "id": 1,
                "session_id": 1,
                "kind": "apply",
                "preset": "boost",
                "started": boost_at,
                "finished": boost_at + 0.1,
                "state": "done",
                "arrays": '["md2"]',
                "changes": '[{"key": "stripe_cache_size@md2", "from": "256", "to": "4096"}]',
            },
        ],
        "tuning_effects": [
            {
                "op_id": 1,
                "array": "md2",
                "run_id": 2,
                "preset": "boost",
                "applied_at": boost_at,
                "before_kb_s": 6000.0,
                "after_kb_s": 24_000.0,
                "ratio": 4.0,
                "measured_at": boost_at + 300,
            },
        ],
        "auth_password": [{"id": 1, "hash": "scrypt$16384$8$1$c2FsdA$ZGlnZXN0", "created": now}],
        "auth_sessions": [
            {
                "token_hash": hashlib.sha256(b"cookie").hexdigest(),
                "csrf": "csrf-1",
                "created": now,
                "expires": now + 86400 * 365 * 30,
            },
        ],
        "api_tokens": [
            {
                "id": 1,
                "name": "home assistant",
                "token_hash": hashlib.sha256(TOKEN.encode()).hexdigest(),
                "created": now,
            },
            {
                "id": 2,
                "name": "old phone",
                "token_hash": hashlib.sha256(b"x").hexdigest(),
                "created": now,
                "revoked": now + 60,
            },
        ],
        "notify_destinations": [
            {
                "id": 1,
                "url": "ntfy://ntfy.sh/mdboost-upgrade",
                "label": "ntfy://ntfy.sh/…rade",
                "source": "page",
                "created": now,
            },
        ],
        "notify_outbox": [
            {
                "id": 1,
                "destination_id": 1,
                "dedup_key": "run:1:finished",
                "kind": "finished",
                "created": now + 7200,
                "message": '{"title": "md2 check done"}',
                "state": "delivered",
                "attempts": 1,
                "next_attempt": now + 7200,
                "delivered": now + 7201,
            },
        ],
        "schedules": [
            {"id": 1, "preset": "boost", "start_minute": 60, "end_minute": 360, "created": now},
        ],
        "autotune_sweeps": [
            {
                "id": 1,
                "array": "md2",
                "run_id": 2,
                "session_id": 1,
                "started": boost_at - 600,
                "finished": boost_at,
                "state": "done",
                "start_values": '{"stripe_cache_size": "256"}',
                "plan": "[]",
                "chosen": '{"stripe_cache_size": "4096"}',
            },
        ],
        "autotune_steps": [
            {
                "sweep_id": 1,
                "seq": 0,
                "knob": "stripe_cache_size",
                "value": "256",
                "role": "reference",
                "written": boost_at - 600,
                "speed_kb_s": 6000.0,
            },
        ],
    }


def fill(conn: sqlite3.Connection, data: dict[str, list[dict[str, Any]]]) -> None:
    """Each row into its table, with the columns that table has at this version."""
    with db.write_transaction(conn):
        for table, rows in data.items():
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if not columns:
                continue  # the table comes later
            for row in rows:
                kept = {k: v for k, v in row.items() if k in columns}
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(kept)}) VALUES ({', '.join('?' * len(kept))})",
                    list(kept.values()),
                )


def contents(conn: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows (but the migrations' own), each as {column: value}, in a stable order."""
    contents = {}
    for (table,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'schema_migrations'"
    ).fetchall():
        cursor = conn.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        contents[table] = sorted(rows, key=lambda row: [repr(row[n]) for n in names])
    return contents


def schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return sorted(tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_master"))


def today(tmp_path: Path) -> list[tuple[str, str, str]]:
    fresh = db.connect(tmp_path / "fresh.db")
    db.migrate(fresh, PROJECT_ROOT / "migrations")
    return schema(fresh)


@pytest.mark.parametrize(
    "version", range(1, len(MIGRATIONS)), ids=[m.stem for m in MIGRATIONS[:-1]]
)
def test_every_earlier_schema_upgrades_with_every_row_and_value(version: int, tmp_path: Path):
    conn = schema_at(version, tmp_path)
    fill(conn, a_month())
    before = contents(conn)
    conn.close()
    upgraded = db.connect(tmp_path / "mdboost.db")
    assert db.migrate(upgraded, PROJECT_ROOT / "migrations") == [
        m.name for m in MIGRATIONS[version:]
    ]
    after = contents(upgraded)
    for table, rows in before.items():
        assert len(after[table]) == len(rows), table
        for old, new in zip(rows, after[table], strict=True):
            assert {k: new[k] for k in old} == old, table  # new columns may join, none change
    assert schema(upgraded) == today(tmp_path)
    summaries = upgraded.execute("SELECT speed_samples, speed_sum_kb_s, last_percent FROM runs")
    assert [tuple(r) for r in summaries] == [
        (r["speed_samples"], r["speed_sum_kb_s"], r["last_percent"]) for r in a_month()["runs"]
    ]
    assert upgraded.execute("PRAGMA foreign_key_check").fetchall() == []
    # The first downsampling converts the old file; a sample of every minute stays, and every
    # sample of the running reshape.
    expected = upgraded.execute(
        "SELECT COUNT(DISTINCT array || ' ' || CAST(ts / 60 AS INTEGER)) FROM samples"
        " WHERE run_id IS NOT 2"
    ).fetchone()[0] + len([s for s in a_month()["samples"] if s.get("run_id") == 2])
    rollup.downsample(upgraded, older_than=START + 30 * 86400)
    assert upgraded.execute("PRAGMA auto_vacuum").fetchone()[0] == db.INCREMENTAL
    assert upgraded.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == expected
    assert upgraded.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_real_server_upgrades_the_previous_schema_and_shows_its_history(tmp_path: Path):
    conn = schema_at(len(MIGRATIONS) - 1, tmp_path)
    fill(conn, a_month())
    conn.close()
    tree = KernelTree(tmp_path / "kernel")
    idle_box(tree)
    data = tmp_path / "data"
    data.mkdir()
    shutil.move(tmp_path / "mdboost.db", data / "mdboost.db")
    # Samples from 2023 are old: MDBOOST_DOWNSAMPLE_AFTER_DAYS keeps them whole here, and
    # MDBOOST_KEEP_DAYS=0 keeps them at all (its 400 days would delete them).
    keep = {"MDBOOST_DOWNSAMPLE_AFTER_DAYS": "36500", "MDBOOST_KEEP_DAYS": "0"}
    with tree_server(tree, tmp_path, **keep) as server:
        runs = server.get("/api/runs")["runs"]
        assert [(r["id"], r["action"]) for r in runs][-2:] == [(2, "reshape"), (1, "check")]
        check = server.get("/api/runs/1")
        assert (check["outcome"], check["avg_speed_kb_s"], check["last_percent"]) == (
            "completed",
            400_000,
            99.9,
        )
        since = START + 86400
        samples = server.get(
            f"/api/arrays/md2/samples?since={since}&until={since + 7200}&points=5000"
        )
        assert len(samples["samples"]) == 1440
        status, tokens = server.request(
            "GET", "/api/tokens", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert status == 200 and "home assistant" in str(tokens)
    with sqlite3.connect(data / "mdboost.db") as upgraded:
        applied = [r[0] for r in upgraded.execute("SELECT name FROM schema_migrations")]
        destinations = upgraded.execute("SELECT url FROM notify_destinations").fetchall()
    assert applied == [m.name for m in MIGRATIONS]
    assert destinations == [("ntfy://ntfy.sh/mdboost-upgrade",)]
