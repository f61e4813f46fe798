import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.store import db
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, syncing_box


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
