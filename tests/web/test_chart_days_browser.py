"""The chart of a run of days at 360 px, and its picture without JavaScript.
A real server on a temporary kernel tree, its SQLite holding a finished 3.5-day resync of md0."""

import itertools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from app.store import db
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, syncing_box
from tests.server import Server, tree_server
from tests.web.browsing import NARROW, Console, screenshot, wait_for_chart

pytestmark = pytest.mark.browser

DAYS = 3.5
AUTOTUNE_STEPS = 11
# Each tick's label as Chart.js drew it: a string, or its lines (time, then the date).
TICK_LABELS = (
    "() => Chart.getChart(document.querySelector('canvas[data-series]')).scales.x.ticks"
    ".map((t) => [].concat(t.label).join(' '))"
)
# Each time label's left and right edge on the canvas, in px, as the axis draws it (centred on
# its tick, each line measured in the axis's font).
LABEL_EDGES = """() => {
  const chart = Chart.getChart(document.querySelector('canvas[data-series]'));
  const axis = chart.scales.x, ctx = chart.ctx;
  ctx.save();
  ctx.font = Chart.helpers.toFont(axis.options.ticks.font).string;
  const edges = axis.ticks.map((t, i) => {
    const width = Math.max(...[].concat(t.label).map((line) => ctx.measureText(line).width));
    const x = axis.getPixelForTick(i);
    return [x - width / 2, x + width / 2];
  });
  ctx.restore();
  return edges;
}"""


def a_run_of_days(path: Path) -> None:
    """md0's resync from DAYS days ago to an hour ago, a sample every 10 minutes, and one
    auto-tune of AUTOTUNE_STEPS steps on its first morning."""
    conn = db.connect(path)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    end = time.time() - 3600
    start = end - DAYS * 86400
    ticks = int(DAYS * 86400 / 600)
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) "
            "VALUES (1, 'md0', 'resync', ?, ?, 'completed', 2490176)",
            (start, end),
        )
        conn.executemany(
            "INSERT INTO samples (ts, array, run_id, state, status, action, percent, done_blocks,"
            " total_blocks, speed_kb_s) VALUES (?, 'md0', 1, 'active', 'UUUU', 'resync', ?, ?,"
            " 2490176, 8000)",
            [(start + 600 * i, 100 * i / ticks, 2490176 * i // ticks) for i in range(ticks + 1)],
        )
        conn.executemany(
            "INSERT INTO events (ts, array, run_id, kind, detail) VALUES (?, 'md0', 1, 'autotune', ?)",
            [
                (start + 8 * 3600 + 300 * i, json.dumps({"label": f"auto-tune step {i + 1}"}))
                for i in range(AUTOTUNE_STEPS)
            ],
        )
    conn.close()


@pytest.fixture
def box(tree: KernelTree, tmp_path: Path) -> Iterator[Server]:
    syncing_box(tree)
    (tmp_path / "data").mkdir()
    a_run_of_days(tmp_path / "data" / "mdboost.db")
    with tree_server(tree, tmp_path) as running:
        yield running


def test_a_run_of_days_has_24_hour_labels_with_dates_at_360_px(browser: Browser, box: Server):
    context = browser.new_context(viewport=NARROW, timezone_id="Asia/Tokyo")
    page = context.new_page()
    console = Console(page)
    page.goto(box.base + "/runs/1")
    wait_for_chart(page)
    labels = page.evaluate(TICK_LABELS)
    assert len(labels) >= 3, labels
    edges = page.evaluate(LABEL_EDGES)
    for (_, right), (left, _) in itertools.pairwise(edges):
        assert left - right >= 4, (labels, edges)  # never run together
    for label in labels:
        assert re.match(r"^([01]\d|2[0-3]):[0-5]\d( \d{1,2} [A-Z][a-z]{2})?$", label), labels
        assert not re.search(r"AM|PM", label, re.IGNORECASE), labels
    dated = [label for label in labels if " " in label]
    assert dated[0] in labels[:2], labels  # the first or, a day change, the second says the day
    assert len(dated) >= 3, labels  # 3.5 days cross midnight at least 3 times
    assert any(label.startswith("00:00 ") for label in dated), labels
    # One labelled band for the auto-tune, no flag for each of its steps.
    expect(page.locator(".chart-box .flag-marker:not(.flag-restart)")).to_have_count(0)
    expect(page.locator("ol.markers li.marker-autotune")).to_have_count(AUTOTUNE_STEPS)
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    screenshot(page, "phone-360-chart-days.png")
    assert console.errors == []
    context.close()


def test_without_javascript_the_run_is_a_picture_not_an_empty_box(browser: Browser, box: Server):
    context = browser.new_context(viewport=NARROW, java_script_enabled=False)
    page = context.new_page()
    page.goto(box.base + "/runs/1")
    picture = page.locator(".chart-box svg.chart-picture")
    expect(picture).to_be_visible()
    assert "md0 resync" in (picture.get_attribute("aria-label") or "")
    expect(picture.locator("title")).to_have_text(
        re.compile(r"md0 resync: 0\.0 % at .*, 100\.0 % at ")
    )
    # 120 points of the run's 505 samples, from 0 % at the left to 100 % at the right.
    path = picture.locator("path").get_attribute("d") or ""
    assert 100 <= path.count("L") <= 119, path[:80]
    assert path.startswith("M0.0,100.0"), path[:80]
    last_x, last_y = map(float, path.rsplit("L", 1)[1].split(","))
    assert (last_x, last_y) == (300.0, 0.0), path[-40:]
    expect(page.locator("canvas[data-series]")).to_be_hidden()
    box_size = page.locator(".chart-box").bounding_box()
    svg_size = picture.bounding_box()
    assert box_size and svg_size and svg_size["height"] >= 0.8 * box_size["height"]
    screenshot(page, "phone-360-chart-no-js.png")
    context.close()
