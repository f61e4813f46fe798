"""Tuning through the real server: crash safety with kill -9, validation, and the boost on the simulator."""

from pathlib import Path

import pytest

from tests.kernel_tree import KernelTree, act_like_md
from tests.server import Server, tree_server, wait_for

BOOSTED = {
    "sys/block/md2/md/stripe_cache_size": "16384\n",
    "sys/block/md2/md/sync_speed_min": "600000\n",
    "sys/block/md2/md/sync_speed_max": "2000000\n",
    "sys/block/md2/queue/read_ahead_kb": "32768\n",
}
TUNING = {
    "MDBOOST_MAX_CACHE_MB": "1024",
    "MDBOOST_API_TOKEN": "test-token-for-tuning-tests-0123456789abcdef0123456789",
}


def tuning_server(tree: KernelTree, tmp_path: Path, **env: str) -> Server:
    return tree_server(tree, tmp_path, **TUNING, **env)


@pytest.mark.parametrize("crash_at", ["after_journal", "mid_write", "after_write"])
def test_kill_9_during_an_apply_ends_original_after_restart(box, tmp_path, crash_at):
    before = box.snapshot()
    server = tuning_server(box, tmp_path, MDBOOST_TEST_CRASH_AT=crash_at).start()
    with pytest.raises(OSError):  # the server dies under the request
        server.request("POST", "/api/boost", {"on": True})
    assert server.process is not None and server.process.wait(timeout=10) == -9
    written = {path for path, value in BOOSTED.items() if box.read(path) == value}
    expected_written = {
        "after_journal": 0,
        "mid_write": 1,
        "after_write": 4,
    }[crash_at]
    assert len(written) == expected_written  # the crash really happened at that point
    with tuning_server(box, tmp_path) as again:
        tuning = again.get("/api/tuning")
        assert tuning["active"] is False  # reconciled at start-up: put back
        act_like_md(box, before)
        assert box.snapshot() == before
        assert again.request("POST", "/api/revert", {})[1]["detail"] == "nothing to revert"
    log = (tmp_path / "server.log").read_text()
    assert "mdboost stopped in the middle of an apply or revert" in log


@pytest.mark.parametrize(
    ("crash_at", "put_back"),
    [("revert_after_journal", 0), ("revert_mid_write", 1), ("revert_after_write", 4)],
)
def test_kill_9_during_a_revert_ends_original_after_restart(box, tmp_path, crash_at, put_back):
    before = box.snapshot()
    first = tuning_server(box, tmp_path).start()
    assert first.request("POST", "/api/boost", {"on": True})[0] == 200
    first.kill()  # the boost stays; the next start resumes it (md2 still reshapes)
    server = tuning_server(box, tmp_path, MDBOOST_TEST_CRASH_AT=crash_at).start()
    with pytest.raises(OSError):
        server.request("POST", "/api/revert", {})
    assert server.process is not None and server.process.wait(timeout=10) == -9
    still_boosted = {path for path, value in BOOSTED.items() if box.read(path) == value}
    assert len(still_boosted) == 4 - put_back  # the crash really happened at that point
    with tuning_server(box, tmp_path) as again:
        assert again.get("/api/tuning")["active"] is False
        act_like_md(box, before)
        assert box.snapshot() == before


def test_kill_9_after_a_boost_resumes_and_revert_restores_the_originals(box, tmp_path):
    before = box.snapshot()
    first = tuning_server(box, tmp_path).start()
    status, body = first.request("POST", "/api/boost", {"on": True})
    assert status == 200 and body["ok"] is True
    first.kill()
    with tuning_server(box, tmp_path) as again:
        assert again.get("/api/tuning")["active"] is True
        assert all(box.read(path) == value for path, value in BOOSTED.items())
        status, body = again.request("POST", "/api/boost", {"on": False})
        assert status == 200 and len(body["restored"]) == 4
        act_like_md(box, before)
        assert box.snapshot() == before
    assert "resuming tuning session" in (tmp_path / "server.log").read_text()


def test_sigterm_reverts_when_revert_on_exit(box, tmp_path):
    before = box.snapshot()
    server = tuning_server(box, tmp_path).start()
    assert server.request("POST", "/api/boost", {"on": True})[0] == 200
    # uvicorn re-raises SIGTERM after a clean shutdown, so the exit status is -15.
    assert server.stop() in (0, -15)
    assert (
        "reverted 4 knobs to their originals (mdboost stopped"
        in (tmp_path / "server.log").read_text()
    )
    act_like_md(box, before)
    assert box.snapshot() == before


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/api/presets/boost/apply", {"arrays": ["../../etc"]}, 422),
        ("/api/presets/boost/apply", {"arrays": ["md0/../../x"]}, 422),
        ("/api/presets/boost/apply", {"arrays": ["sda"]}, 422),
        ("/api/presets/boost/apply", {"arrays": ["md99"]}, 422),
        ("/api/presets/boost/apply", {"arrays": "md2"}, 422),
        ("/api/presets/boost/apply", {"arrays": []}, 422),  # not "all arrays"
        ("/api/presets/boost/plan", {"arrays": []}, 422),
        ("/api/presets/boost/apply", {"arrays": ["md2"], "stripe_cache_size": 99999}, 422),
        ("/api/presets/nope/apply", None, 404),
        ("/api/presets/..%2F..%2Fetc/apply", None, 404),
        ("/api/presets/BOOST/apply", None, 422),
        ("/api/boost", {"on": "maybe"}, 422),
        ("/api/boost", {}, 422),
    ],
)
def test_bad_requests_get_a_clear_4xx_and_touch_nothing(box, tmp_path, path, body, status):
    before = box.snapshot()
    with tuning_server(box, tmp_path) as server:
        got, answer = server.request("POST", path, body)
        assert got == status, answer
        assert "detail" in answer
        if got == 422 and isinstance(answer["detail"], dict):
            assert "no array named" in answer["detail"]["message"]
    assert box.snapshot() == before


def test_the_api_lists_presets_plans_and_refuses_a_kernel_rejection(box, tmp_path):
    with tuning_server(box, tmp_path) as server:
        presets = {p["name"]: p for p in server.get("/api/presets")["presets"]}
        assert set(presets) == {"stock", "balanced", "boost", "quiet"}
        assert all(k["reason"] for k in presets["boost"]["knobs"])
        status, plan = server.request("POST", "/api/presets/boost/plan", {})
        assert status == 200 and plan["ram"]["cost_mib"] == 256.0
        assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"  # a plan writes nothing
        target = box.sys / "block/md2/queue/read_ahead_kb"
        target.unlink()
        target.symlink_to("/sys/devices/system/cpu/kernel_max")
        status, answer = server.request("POST", "/api/boost", {"on": True})
        assert status == 409
        assert answer["detail"]["knob"] == "read_ahead_kb"
        assert answer["detail"]["kernel"] == "Permission denied"
        assert len(answer["detail"]["rolled_back"]) == 3
        assert box.read("sys/block/md2/md/stripe_cache_size") == "513\n"


def mean_speed_mb_s(samples: list[dict], since: float, until: float) -> float:
    window = [s for s in samples if since <= s["ts"] <= until and s["done_blocks"] is not None]
    first, last = window[0], window[-1]
    return (last["done_blocks"] - first["done_blocks"]) * 1.024 / 1000 / (last["ts"] - first["ts"])


def test_on_the_simulator_boost_speeds_up_revert_slows_down_and_the_effect_is_measured(tmp_path):
    args = ["demo", "--speedup", "100", "--state-dir", str(tmp_path)]
    with Server(args, env={"MDBOOST_SAMPLE_SECONDS": "0.2"}) as server:

        def samples() -> list[dict]:
            return server.get("/api/arrays/md2/samples?points=5000")["samples"]

        start = samples()[0]["ts"]
        wait_for(lambda: samples()[-1]["ts"] - start > 400, 60, "400 simulated seconds")
        assert server.request("POST", "/api/boost", {"on": True})[0] == 200
        applied = server.get("/api/tuning")["effects"][0]["applied_at"]
        effect = wait_for(
            lambda: (e := server.get("/api/tuning")["effects"][0])["complete"] and e, 60, "effect"
        )
        assert effect["ratio"] > 3, effect
        assert effect["summary"].startswith("boost: ") and "MB/s, ×" in effect["summary"]
        status, reverted = server.request("POST", "/api/revert", {})
        assert status == 200 and len(reverted["restored"]) == 4
        reverted_at = server.get(f"/api/runs/{effect['run_id']}")["events"][-1]["ts"]
        wait_for(lambda: samples()[-1]["ts"] - reverted_at > 400, 60, "400 s after the revert")
        history = samples()
        before = mean_speed_mb_s(history, applied - 400, applied)
        boosted = mean_speed_mb_s(history, applied + 30, reverted_at)
        after = mean_speed_mb_s(history, reverted_at + 30, reverted_at + 400)
        assert boosted > 3 * before and boosted > 3 * after
        kinds = [e["kind"] for e in server.get(f"/api/runs/{effect['run_id']}")["events"]]
        assert [kind for kind in kinds if kind != "diagnosis"] == ["apply", "revert"]
        assert "diagnosis" in kinds  # the stock stripe cache, then the disks: why it was slow
