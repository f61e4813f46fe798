"""The real server (uvicorn, free port) on the simulator, driven over HTTP."""

import sqlite3
from pathlib import Path

from tests.kernel_tree import KernelTree, idle_box
from tests.server import Server, tree_server, wait_for


def md2_samples(server: Server) -> list[dict]:
    return server.get("/api/arrays/md2/samples?points=5000")["samples"]


def test_samples_appear_and_percent_advances(tmp_path: Path):
    with Server(["demo", "--speedup", "300", "--state-dir", str(tmp_path)]) as server:
        samples = wait_for(lambda: len(md2_samples(server)) >= 5 and md2_samples(server), 30)
        arrays = {a["name"]: a for a in server.get("/api/arrays")["arrays"]}
        assert {n: a["role"] for n, a in arrays.items()} == {
            "md0": "system",
            "md1": "swap",
            "md2": "data",
            "md3": "data",
        }
        assert arrays["md2"]["sync"]["action"] == "reshape"
        assert arrays["md2"]["run"]["outcome"] == "running"
        assert samples[-1]["done_blocks"] > samples[0]["done_blocks"]
        runs = server.get("/api/runs")["runs"]
        assert [(r["array"], r["action"]) for r in runs] == [("md2", "reshape")]
        detail = server.get(f"/api/runs/{runs[0]['id']}")
        assert detail["latest_sample"]["run_id"] == runs[0]["id"]


def test_kill_9_loses_at_most_the_sample_in_flight_and_restart_continues_the_run(tmp_path: Path):
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path)]
    first = Server(args, log=tmp_path / "server.log").start()
    wait_for(lambda: len(md2_samples(first)) >= 10, 30, "10 samples")
    before = md2_samples(first)
    first.kill()
    db = sqlite3.connect(tmp_path / "mdboost.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = [r[0] for r in db.execute("SELECT ts FROM samples WHERE array='md2' ORDER BY ts")]
    assert set(s["ts"] for s in before) <= set(stored)  # everything the API showed survived
    db.close()
    with Server(args, log=tmp_path / "server.log") as second:
        after = wait_for(lambda: len(md2_samples(second)) > len(stored) + 3 and md2_samples(second))
        runs = second.get("/api/runs")["runs"]
        assert [(r["array"], r["outcome"]) for r in runs] == [("md2", "running")]
        assert {s["run_id"] for s in after} == {runs[0]["id"]}
        assert after[-1]["done_blocks"] > before[-1]["done_blocks"]


def test_api_errors_are_json(tmp_path: Path):
    with Server(["demo", "--state-dir", str(tmp_path)]) as server:
        assert server.request("GET", "/api/arrays/md9/samples") == (
            404,
            {"detail": "no array named 'md9'"},
        )
        status, body = server.request("GET", "/api/arrays/md2/samples?points=abc")
        assert status == 422 and body["detail"][0]["loc"] == ["query", "points"]
        status, body = server.request("GET", "/api/arrays/md2/samples?since=10&until=5")
        assert status == 422 and "since" in body["detail"]
        assert server.request("GET", "/api/runs/999")[0] == 404
        assert server.request("GET", "/api/runs?array=../../etc")[0] == 422
        assert "/api/arrays" in server.get("/openapi.json")["paths"]


def test_an_idle_array_stores_one_sample_and_the_api_still_draws_its_line_to_now(tmp_path: Path):
    """Nothing changes, so nothing more is stored; the line still reaches the present."""
    tree = KernelTree(tmp_path / "kernel")
    idle_box(tree)
    with tree_server(tree, tmp_path, MDBOOST_SAMPLE_SECONDS="0.1") as server:
        first = wait_for(lambda: server.get("/api/arrays/md0/samples")["samples"], 30)[0]
        samples = wait_for(
            lambda: (
                (got := server.get("/api/arrays/md0/samples")["samples"])[-1]["ts"]
                > first["ts"] + 1
                and got
            ),
            30,
            "ticks a second after the first",
        )
        assert server.get("/api/arrays")["as_of"] >= samples[-1]["ts"]
        with sqlite3.connect(tmp_path / "data" / "mdboost.db") as db:
            rows = db.execute("SELECT ts FROM samples WHERE array='md0'").fetchall()
    assert rows == [(first["ts"],)]
    assert samples == [first, {**first, "ts": samples[-1]["ts"]}]
