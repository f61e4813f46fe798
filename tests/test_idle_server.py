"""An idle `mdboost serve` sleeps: between its 60 s ticks nothing wakes it, neither
uvicorn's 0.1 s loop (600 wake-ups a minute before) nor the delivery task's 1 s poll; it still
answers with a Date header of the current second and stops at once on SIGTERM."""

import time
import urllib.request
from email.utils import parsedate_to_datetime
from pathlib import Path

from tests.kernel_tree import KernelTree, idle_box
from tests.server import tree_server

WINDOW_S = 10.0


def voluntary_switches(pid: int) -> int:
    """Every thread's voluntary context switches: each is the thread going to sleep."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches"):
                total += int(line.split()[1])
    return total


def test_an_idle_server_does_not_wake_between_ticks(tmp_path: Path):
    tree = KernelTree(tmp_path / "kernel")
    idle_box(tree)
    server = tree_server(tree, tmp_path)
    del server.env["MDBOOST_SAMPLE_SECONDS"]  # the real intervals: 60 s while all are idle
    with server:
        assert server.process is not None
        pid = server.process.pid
        with urllib.request.urlopen(server.base + "/healthz", timeout=5) as response:
            date = parsedate_to_datetime(response.headers["Date"]).timestamp()
        assert abs(date - time.time()) < 3
        before = voluntary_switches(pid)
        time.sleep(WINDOW_S)  # the measured window itself, not synchronisation
        woke = voluntary_switches(pid) - before
        started = time.monotonic()
        assert server.stop() == -15  # uvicorn re-raises the SIGTERM it handled
        stopped_s = time.monotonic() - started
    # At most one tick falls in the window (a handful of switches); before, ~115 in 10 s.
    assert woke <= 25, f"{woke} wake-ups in {WINDOW_S:g} s idle"
    assert stopped_s < 5
