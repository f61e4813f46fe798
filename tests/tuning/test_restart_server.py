"""After the NAS restarts mid-job, md resumes the reshape and the kernel holds its own values
again: the boost the owner left on is applied again, over the real server, with the kernel's
fresh values as the originals that a revert puts back, and the page and /api/tuning say so.
A finished job is not boosted again, and knobs someone else changed during the same boot are
no restart: that session is put back as before."""

from pathlib import Path

import pytest

from tests.kernel_tree import KernelTree, act_like_md, booted, idle_box, syncing_box
from tests.server import Server, tree_server

TUNING = {
    "MDBOOST_MAX_CACHE_MB": "1024",
    "MDBOOST_API_TOKEN": "test-token-for-restarts-0123456789abcdef0123456789",
}
CACHE = "sys/block/md2/md/stripe_cache_size"
AHEAD = "sys/block/md2/queue/read_ahead_kb"
FLOOR = "sys/block/md2/md/sync_speed_min"
REAPPLIED = "boost re-applied after the NAS restarted"


def tuning_server(tree: KernelTree, tmp_path: Path) -> Server:
    return tree_server(tree, tmp_path, **TUNING)


def fresh_kernel(tree: KernelTree) -> dict[str, str]:
    """What md and the block layer hold after a boot: not DSM's values from before (513, 384),
    so that a revert to the old originals would show."""
    fresh = {
        CACHE: "256\n",
        AHEAD: "128\n",
        FLOOR: "1000 (system)\n",
        "sys/block/md2/md/sync_speed_max": "200000 (system)\n",
        "proc/sys/dev/raid/speed_limit_min": "1000\n",
    }
    for path, text in fresh.items():
        tree.write(path, text)
    return fresh


def boosted(tree: KernelTree) -> str:
    return tree.read(CACHE)


@pytest.fixture
def reshaping(tree: KernelTree) -> KernelTree:
    syncing_box(tree)
    booted(tree, "0f6d6a8e-0000-4000-8000-000000000001", 86400.0)
    return tree


def boost_then(tree: KernelTree, tmp_path: Path, stop: str) -> str:
    server = tuning_server(tree, tmp_path).start()
    status, _ = server.request("POST", "/api/boost", {"on": True})
    assert status == 200
    on = boosted(tree)
    assert on != "513\n"
    if stop == "kill":  # a power cut: the session stays open in the journal
        server.kill()
    else:  # DSM stops the container as the NAS shuts down: mdboost puts the originals back
        server.stop()
        assert boosted(tree) == "513\n"
    return on


@pytest.mark.parametrize("stop", ["kill", "shutdown"])
def test_boost_left_on_is_applied_again_after_the_nas_restarts(reshaping, tmp_path, stop):
    box = reshaping
    on = boost_then(box, tmp_path, stop)
    before = fresh_kernel(box)
    booted(box, "0f6d6a8e-0000-4000-8000-000000000002", 0.01)  # md resumed the reshape
    with tuning_server(box, tmp_path) as again:
        tuning = again.get("/api/tuning")
        assert tuning["active"] is True and tuning["preset"] == "boost"
        assert tuning["restarted"] == REAPPLIED
        assert box.read(CACHE) == on
        originals = {k["key"]: k["original"] for k in tuning["knobs"]}
        assert originals["stripe_cache_size@md2"] == "256"  # the fresh value, not 513
        assert originals["read_ahead_kb@md2"] == "128"
        assert "Boost re-applied after the NAS restarted" in again.text("/")
        assert again.request("POST", "/api/revert", {})[0] == 200
        assert again.get("/api/tuning")["restarted"] is None
    act_like_md(box, {p: t.encode() for p, t in before.items()})
    for path, text in before.items():
        assert box.read(path) == text, path


def test_a_finished_job_is_not_boosted_again_after_the_restart(reshaping, tmp_path):
    box = reshaping
    boost_then(box, tmp_path, "kill")
    idle_box(box)  # md2's reshape ended while the NAS was down
    fresh_kernel(box)
    booted(box, "0f6d6a8e-0000-4000-8000-000000000002", 0.01)
    kernel = box.snapshot()
    with tuning_server(box, tmp_path) as again:
        tuning = again.get("/api/tuning")
        assert tuning["active"] is False and tuning["restarted"] is None
    after = box.snapshot()
    assert {p: after[p] for p in kernel if "/md2/" in p or "raid" in p} == {
        p: kernel[p] for p in kernel if "/md2/" in p or "raid" in p
    }, "the kernel's own values were overwritten"


def test_knobs_changed_by_someone_else_in_the_same_boot_are_no_restart(reshaping, tmp_path):
    box = reshaping
    boost_then(box, tmp_path, "kill")
    fresh_kernel(box)  # someone put other values in, but the NAS did not restart
    with tuning_server(box, tmp_path) as again:
        tuning = again.get("/api/tuning")
        assert tuning["active"] is False and tuning["restarted"] is None
        assert "re-applied after the NAS restarted" not in again.text("/")


def test_without_a_boot_id_a_kernel_younger_than_the_session_is_a_restart(tree, tmp_path):
    syncing_box(tree)
    tree.write("proc/uptime", "86400.00 164160.00")  # no boot_id file: uptime alone tells
    on = boost_then(tree, tmp_path, "kill")
    fresh_kernel(tree)
    tree.write("proc/uptime", "0.01 0.01")
    with tuning_server(tree, tmp_path) as again:
        tuning = again.get("/api/tuning")
        assert tuning["restarted"] == REAPPLIED
        assert tree.read(CACHE) == on
