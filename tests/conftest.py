import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.store import db
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, syncing_box

# scripts/test.sh runs the suite in two processes (pytest-xdist, --dist loadscope): every test
# that boots QEMU in one work unit, collected first, so the VMs run one after another from the
# start while the other process runs the rest a module at a time (each module's server and browser
# started once). One VM beside one test process on CI's two cores, never two VMs at once.
# (xdist's own `xdist_group` marks do nothing under pytest 9: xdist renames item._nodeid, which
# pytest 9 no longer reads; so the scheduler below groups by node id.)
VM_UNIT = "real-kernel VMs"
VM_BENCHMARKS = ("[bench_realkernel.py]", "[bench_autotune.py]")  # tests/test_benchmarks.py


def boots_a_vm(nodeid: str) -> bool:
    return nodeid.startswith("tests/realkernel/") or nodeid.endswith(VM_BENCHMARKS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The VM unit first: it is the longest, and the rest fits beside it."""
    items[:] = [i for i in items if boots_a_vm(i.nodeid)] + [
        i for i in items if not boots_a_vm(i.nodeid)
    ]


@pytest.hookimpl(optionalhook=True)  # pytest -p no:xdist still runs
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class VmsInOneUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return VM_UNIT if boots_a_vm(nodeid) else nodeid.split("::")[0]

    return VmsInOneUnit(config, log)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures benchmarks-in-tests measured (`figure` fixture), printed at the end: a worker
    process's own output never reaches the terminal."""
    lines = [
        f"{report.nodeid.split('::')[-1]}: {value}"
        for report in terminalreporter.stats.get("passed", [])
        for name, value in report.user_properties
        if name == "figure"
    ]
    if lines:
        terminalreporter.section("measured figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def figure(record_property: Callable[[str, object], None]) -> Callable[[str], None]:
    """figure(text): a measured figure, shown in the run's summary (pytest_terminal_summary)."""
    return lambda text: record_property("figure", text)


@pytest.fixture(autouse=True)
def allow_the_test_client_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starlette's TestClient sends `Host: testserver`: allow that name in tests only."""
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")


@pytest.fixture
def tree(tmp_path: Path) -> KernelTree:
    return KernelTree(tmp_path / "kernel")


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = db.connect(tmp_path / "mdboost.db")
    db.migrate(connection, PROJECT_ROOT / "migrations")
    yield connection
    connection.close()


@pytest.fixture
def box(tree: KernelTree) -> KernelTree:
    """md2 reshaping with DSM-like knob values (kernel_tree.syncing_box)."""
    syncing_box(tree)
    return tree


class SmallDisk:
    """A real 4 MiB tmpfs that a test fills up, like a NAS volume with no space left."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def fill(self) -> None:
        with self.filler.open("ab", buffering=0) as file:
            for size in (1 << 16, 512, 1):
                try:
                    while file.write(b"\0" * size):
                        pass
                except OSError:  # ENOSPC: on to smaller pieces, down to the last byte
                    pass

    def free(self) -> None:
        self.filler.unlink()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    if os.geteuid() != 0 and os.environ.get("CI") != "true":
        pytest.skip("a full disk is simulated with a real tmpfs, and mounting one needs root")
    mount = tmp_path / "small-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)
