import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store import db
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, syncing_box


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
