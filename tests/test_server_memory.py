"""The server's memory while the page polls a running reshape: `mdboost serve` stays at or under
100 MiB of RSS, and flat: after a warm-up (every template compiled, every cache filled once),
more polls and sampler ticks add under 5 %. scripts/bench_year.py --only week measures the same
bound over 7 simulated days; this is the short form every test run checks."""

from pathlib import Path

from tests.kernel_tree import KernelTree, syncing_box
from tests.server import tree_server

# What the open page asks while a reshape runs (templates/_*.html's hx-get and static/app.js).
POLLS = (
    "/",
    "/ui/arrays/md2",
    "/ui/boost",
    "/api/arrays/md2/forecast",
    "/api/pool/forecast",
    "/api/runs",
)
MAX_RSS_MIB = 100.0
MAX_GROWTH = 0.05


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LookupError("VmRSS")


def test_rss_stays_under_100_mib_and_flat_while_the_page_polls_a_reshape(tmp_path: Path):
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    with tree_server(tree, tmp_path) as server:  # a tick every 0.2 s: many ticks meanwhile
        assert server.process is not None
        pid = server.process.pid
        for _ in range(5):
            for path in POLLS:
                server.text(path)
        warm = rss_mib(pid)
        for _ in range(60):
            for path in POLLS:
                server.text(path)
        after = rss_mib(pid)
    assert after <= MAX_RSS_MIB, f"{after:.1f} MiB after the polls"
    assert after <= warm * (1 + MAX_GROWTH), f"{warm:.1f} -> {after:.1f} MiB"
