"""A full disk under the real server (a real 4 MiB tmpfs holds the database): the page and
/healthz say so, the log says it once a minute at most, and a change is refused with a 503 and
its reason, never a 500; when space comes back, samples are recorded again."""

import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import SmallDisk
from tests.kernel_tree import KernelTree
from tests.server import Server, tree_server, wait_for

TUNING = {
    "MDBOOST_MAX_CACHE_MB": "1024",
    "MDBOOST_API_TOKEN": "test-token-for-full-disks-0123456789abcdef",
}


def health_status(server: Server) -> int:
    try:
        with urllib.request.urlopen(server.base + "/healthz", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_full_disk_is_said_and_every_change_refused_with_its_reason(
    box: KernelTree, tmp_path: Path, small_disk: SmallDisk
):
    server = tree_server(box, tmp_path, MDBOOST_DB=str(small_disk.path / "mdboost.db"), **TUNING)
    log = tmp_path / "server.log"
    with server:
        assert health_status(server) == 200
        small_disk.fill()
        wait_for(lambda: health_status(server) == 503, 60, "/healthz to say the disk is full")
        page = server.text("/")
        assert "samples are not being recorded: the disk holding the database is full" in page
        for path, body in (("/api/autotune", {}), ("/api/boost", {"on": True})):
            status, answer = server.request("POST", path, body)
            assert status == 503, (path, answer)
            assert "cannot be written" in str(answer), answer
        written = log.read_text().count("cannot write samples")
        assert written <= 1  # many 0.2 s ticks failed, one line said so
        assert "Traceback" not in log.read_text()
        small_disk.free()
        wait_for(lambda: health_status(server) == 200, 60, "/healthz once there is room")
    assert "samples are recorded again" in log.read_text()
