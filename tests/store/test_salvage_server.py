"""History salvaged, over the real server: rows still readable in a damaged database moved aside
come back into the fresh one, and the page says how many."""

import sqlite3
from pathlib import Path

from tests.kernel_tree import KernelTree
from tests.server import runs_of, tree_server, wait_for
from tests.tuning.test_originals_server import zero_table_page


def count(path: Path, table: str) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_readable_history_comes_back_into_the_fresh_database(box: KernelTree, tmp_path: Path):
    path = tmp_path / "data" / "mdboost.db"
    with tree_server(box, tmp_path) as server:
        first = wait_for(lambda: runs_of(server).get("md2"), what="md2's run")
        wait_for(lambda: count(path, "samples") >= 40, 60, "40 samples")
    samples, runs = count(path, "samples"), count(path, "runs")
    zero_table_page(path, "schedules")  # damaged, but not where the history is
    with tree_server(box, tmp_path) as server:
        run = wait_for(lambda: runs_of(server).get("md2"), what="md2's run in the fresh file")
        page = server.text("/")
    assert run["id"] == first["id"] and run["started"] == first["started"]  # the same run goes on
    assert count(path, "samples") >= samples
    salvaged = samples + runs  # and the events, which the page counts too
    assert "rows of history (runs, samples, events) still readable in it were copied back" in page
    shown = int(page.split(" rows of history")[0].rsplit(":", 1)[-1].strip().replace(",", ""))
    assert shown >= salvaged
