"""An apply that fails leaves no half-state. A body is refused whole before
any write, and a failure after a kernel write leaves no session, no effect row and no drift:
the journal and the kernel agree. Through the real server on a temporary kernel tree."""

import sqlite3
from pathlib import Path

import pytest

from tests.kernel_tree import KernelTree, act_like_md
from tests.server import Server, tree_server, wait_for

TOKEN = "test-token-for-half-states-0123456789abcdef0123456789"


def tuning_server(tree: KernelTree, tmp_path: Path) -> Server:
    env = {"MDBOOST_MAX_CACHE_MB": "1024", "MDBOOST_API_TOKEN": TOKEN}
    return tree_server(tree, tmp_path, **env)


def journal(tmp_path: Path) -> dict[str, int]:
    db = sqlite3.connect(tmp_path / "data" / "mdboost.db")
    try:
        return {
            "open_sessions": db.execute(
                "SELECT COUNT(*) FROM tuning_sessions WHERE ended IS NULL"
            ).fetchone()[0],
            "effects": db.execute("SELECT COUNT(*) FROM tuning_effects").fetchone()[0],
            "knobs_of_open_sessions": db.execute(
                "SELECT COUNT(*) FROM tuning_knobs JOIN tuning_sessions s ON s.id = session_id"
                " WHERE s.ended IS NULL"
            ).fetchone()[0],
        }
    finally:
        db.close()


def two_more_ticks(server: Server) -> None:
    """Wait until the sampler has looked at the kernel twice more (drift is judged each tick)."""
    count = len(server.get("/api/arrays/md2/samples?points=5000")["samples"])
    wait_for(
        lambda: len(server.get("/api/arrays/md2/samples?points=5000")["samples"]) >= count + 2,
        what="two more samples",
    )


def no_drift(server: Server) -> bool:
    with_drift = [
        line
        for line in server.text("/metrics").splitlines()
        if line.startswith("mdboost_tuning_knob_drift{") and not line.endswith(" 0.0")
    ]
    return not with_drift


CLEAN = {"open_sessions": 0, "effects": 0, "knobs_of_open_sessions": 0}


@pytest.mark.parametrize(
    "body",
    [
        {"arrays": ["md2", "md2"]},
        {"arrays": ["md2", "md0", "md2"]},
        {"arrays": ["md2", "md9"]},
        {"arrays": ["md2", "md02"]},
        {"arrays": "md2"},
        {"arrays": [2]},
    ],
    ids=["twice", "twice-apart", "unknown", "leading-zero", "not-a-list", "not-a-name"],
)
def test_a_bad_array_list_is_refused_before_any_write(box, tmp_path, body):
    before = box.snapshot()
    with tuning_server(box, tmp_path) as server:
        status, answer = server.request("POST", "/api/presets/boost/apply", body)
        assert status == 422, answer
        assert box.snapshot() == before
        two_more_ticks(server)
        assert server.get("/api/tuning")["active"] is False
        assert no_drift(server)
    assert journal(tmp_path) == CLEAN


def test_a_journal_failure_after_the_kernel_writes_leaves_no_session_effect_or_drift(box, tmp_path):
    before = box.snapshot()
    with tuning_server(box, tmp_path) as server:
        db = sqlite3.connect(tmp_path / "data" / "mdboost.db")
        # The last journal write of an apply fails after every kernel write (as a full disk or
        # a constraint would): a real SQLite error from a real trigger.
        db.execute(
            "CREATE TRIGGER fail_effects BEFORE INSERT ON tuning_effects"
            " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        db.commit()
        db.close()
        status, answer = server.request("POST", "/api/presets/boost/apply", {"arrays": ["md2"]})
        assert status == 503, answer
        act_like_md(box, before)
        assert box.snapshot() == before  # the kernel is back where it was
        two_more_ticks(server)
        assert server.get("/api/tuning")["active"] is False
        assert no_drift(server)
        assert server.request("POST", "/api/revert", {})[1]["detail"] == "nothing to revert"
    assert journal(tmp_path) == CLEAN
