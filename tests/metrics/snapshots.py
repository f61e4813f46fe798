"""Boxes for the /metrics tests: captured kernel states as the sampler would hold them."""

from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.snapshot import Snapshot
from tests import PROJECT_ROOT
from tests.present import array_now

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
KERNEL = FIXTURES / "kernel"
KERNEL_STATES = sorted(p.name for p in KERNEL.iterdir() if p.is_dir())


def kernel_snapshot(state: str) -> Snapshot:
    """tests/fixtures/kernel/<state>: its mdstat, each array's sysfs and the global limits."""
    host = Host(KERNEL / state / "proc", KERNEL / state / "sys")
    parsed = mdstat_parse.parse(host.read_mdstat() or "")
    arrays = tuple(array_now(a, host.read_array_sysfs(a.name)) for a in parsed.arrays)
    return Snapshot(arrays, *host.read_global_speed_limits())
