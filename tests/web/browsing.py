"""Shared by the browser suites: Debian's chromium via Playwright, viewports, helpers."""

from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, ConsoleMessage, Page

from tests import PROJECT_ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Each test's own pictures; the curated set in artifacts/screenshots comes from scripts/screenshots.py.
SCREENSHOTS = PROJECT_ROOT / "artifacts" / "test-screenshots"
PHONE = {"width": 390, "height": 844}
NARROW = {"width": 360, "height": 740}
DESKTOP = {"width": 1280, "height": 900}
FIRST_LOAD_BUDGET = 300_000  # bytes on the wire
# Functions, not expressions: Playwright evals expression strings, which the page's CSP refuses.
CHART_READY = "() => { const c = document.querySelector('canvas[data-series]'); const chart = c && Chart.getChart(c); return !!chart && chart.data.datasets[0].data.length > 0; }"


class Console:
    """Errors the page printed or threw."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        page.on("console", self.on_console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")


def open_page(browser: Browser, viewport: dict[str, int], scheme: Any) -> Page:
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    return context.new_page()


def wait_for_chart(page: Page) -> None:
    page.wait_for_function(CHART_READY)


def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=path, full_page=True)
    return path


TAP_TARGETS = "a[href], button, input:not([type=hidden]), select, textarea, summary, [role=switch]"


def small_tap_targets(page: Page) -> list[str]:
    """Every visible interactive element smaller than 44x44 CSS px (WCAG 2.5.5), by its text."""
    small = []
    for target in page.locator(TAP_TARGETS).all():
        box = target.bounding_box()
        if box is None or not target.is_visible():
            continue
        if box["width"] < 44 or box["height"] < 44:
            name = target.evaluate("e => e.outerHTML.slice(0, 80)")
            small.append(f"{box['width']:.0f}x{box['height']:.0f} {name}")
    width = page.evaluate("document.documentElement.scrollWidth")
    if width > page.viewport_size["width"]:
        small.append(f"the page is {width} px wide")
    return small
