"""How mdboost stops and starts beside itself, over the real server and a kernel tree: a second
server on the same database refuses to start and touches nothing, and SIGHUP reverts and exits
like SIGTERM."""

import signal
import subprocess
import time
from pathlib import Path

from tests.kernel_tree import KernelTree, act_like_md
from tests.server import Server, tree_server
from tests.test_cli import mdboost

BOOSTED = {
    "sys/block/md2/md/stripe_cache_size": "16384\n",
    "sys/block/md2/md/sync_speed_min": "600000\n",
    "sys/block/md2/md/sync_speed_max": "2000000\n",
    "sys/block/md2/queue/read_ahead_kb": "32768\n",
}
TUNING = {"MDBOOST_MAX_CACHE_MB": "1024", "MDBOOST_API_TOKEN": "test-token-for-stops"}


def tuning_server(tree: KernelTree, tmp_path: Path, **env: str) -> Server:
    return tree_server(tree, tmp_path, **TUNING, **env)


def knobs(tree: KernelTree) -> dict[str, str]:
    return {path: tree.read(path) for path in BOOSTED}


def test_a_second_server_on_one_database_refuses_and_touches_nothing(box, tmp_path):
    before = box.snapshot()
    with tuning_server(box, tmp_path) as first:
        assert first.request("POST", "/api/boost", {"on": True})[0] == 200
        boosted = box.snapshot()
        second = tuning_server(box, tmp_path)
        assert first.process is not None
        result = mdboost(*second.args, env=second.env)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"another mdboost (pid {first.process.pid})" in lines[0]
        assert box.snapshot() == boosted  # the second one wrote no knob, nor reverted any
        assert first.get("/api/tuning")["active"] is True
    act_like_md(box, before)
    for path in BOOSTED:
        assert box.read(path) == before[path].decode(), path  # the first one's stop reverted


def test_sighup_reverts_and_exits(box, tmp_path):
    before = box.snapshot()
    server = tuning_server(box, tmp_path).start()
    assert server.request("POST", "/api/boost", {"on": True})[0] == 200
    assert knobs(box) == BOOSTED
    assert server.process is not None
    began = time.monotonic()
    server.process.send_signal(signal.SIGHUP)
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError("SIGHUP did not stop mdboost within 15 s") from None
    assert time.monotonic() - began < 10
    act_like_md(box, before)
    for path in BOOSTED:
        assert box.read(path) == before[path].decode(), path
    assert "reverted 4 knobs to their originals" in (tmp_path / "server.log").read_text()
