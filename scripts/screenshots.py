"""Screenshots of the page at 360, 390 and 1366 px, light and dark.

    .venv/bin/python scripts/screenshots.py   # artifacts/screenshots/<scene>-<width>-<scheme>.png

Scenes: first visit (the sentence and boost on the first screen), md2's card with its Details
and disks open (the finish in words, the kernel's finish=, each disk's model), the boost
confirmation, the second after Apply (the panel shows the values read back), boosted
with its measured effect, auto-tuned (the switch and the sentence name that state) and its one
sentence, boost turned off (said so), notifications ("Tell my phone") after a test message, a
finished run's own page (its outcome, chart and changes), the sign-in page (the demo's, which
says where its password is, and a NAS's), an SHR expansion
(md2 done, md3 reshaping: the sentence speaks for the pool). Each runs `mdboost demo` and
Debian's chromium; viewport-sized PNGs (what an owner sees first), so they stay small.
"""

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, Page, expect, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server, forecast_ok, runs_of, wait_for

OUT = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
SIZES = [(360, 740), (390, 844), (1366, 800)]
SCHEMES = ["light", "dark"]
CHART_READY = (
    "() => { const c = document.querySelector('canvas[data-series]');"
    " const chart = c && Chart.getChart(c);"
    " return !!chart && chart.data.datasets[0].data.length > 0; }"
)


def shoot(browser: Browser, scene: str, url: str, then: Callable[[Page], None]) -> None:
    for width, height in SIZES:
        for scheme in SCHEMES:
            context = browser.new_context(
                viewport={"width": width, "height": height}, color_scheme=scheme
            )
            page = context.new_page()
            page.goto(url)
            then(page)
            path = OUT / f"{scene}-{width}-{scheme}.png"
            page.screenshot(path=path)
            print(f"{path.relative_to(OUT.parent.parent)}: {path.stat().st_size} bytes")
            context.close()


def chart(page: Page) -> None:
    page.wait_for_function(CHART_READY)


def confirm(page: Page) -> None:
    chart(page)
    page.get_by_role("switch").click()
    expect(page.locator("#boost form.confirm")).to_be_visible()
    page.locator("#boost").scroll_into_view_if_needed()


def card_in_words(page: Page) -> None:
    """md2's card with its Details and disks open: the range, the kernel's finish=, each disk's
    model and size."""
    chart(page)
    page.locator("#details-md2 > summary").click()
    page.locator("#members-md2 > summary").click()
    page.locator("#array-md2 .facts").first.scroll_into_view_if_needed()


def autotune_said(page: Page) -> None:
    """The auto-tune panel's one sentence, its table under Details."""
    chart(page)
    page.locator("#boost .autotune-said").scroll_into_view_if_needed()


def just_applied(box: Server) -> Callable[[Page], None]:
    """The second after Apply: each shot starts untuned (the previous one's boost reverted)."""

    def then(page: Page) -> None:
        box.request("POST", "/api/revert", {})
        page.reload()
        confirm(page)
        page.get_by_role("button", name="Apply boost").click()
        expect(page.locator("#boost-done")).to_be_visible()
        page.locator("#boost").scroll_into_view_if_needed()

    return then


def turned_off(box: Server) -> Callable[[Page], None]:
    """Boost switched off: the panel says what it did."""

    def then(page: Page) -> None:
        box.request("POST", "/api/presets/boost/apply", {})
        page.reload()
        page.get_by_role("switch").click()
        expect(page.locator("#boost-done")).to_be_visible()
        page.locator("#boost").scroll_into_view_if_needed()

    return then


def tell_my_phone(receiver_url: str) -> Callable[[Page], None]:
    """Sign in from the main page's "Tell my phone", add a receiver, send it a test."""

    def then(page: Page) -> None:
        page.get_by_role("link", name="Tell my phone").click()
        page.get_by_label("Password").fill("sofa-and-phone")
        page.get_by_role("button", name="Sign in").click()
        if page.locator("#notify .destinations tbody tr").count() == 0:
            page.get_by_label("Destination URL").fill(receiver_url)
            page.get_by_role("button", name="Add destination").click()
        page.get_by_role("button", name="Send a test").click()
        expect(page.locator("#notify [role=status]")).to_be_visible()
        page.locator("#notify").scroll_into_view_if_needed()

    return then


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    state = Path(tempfile.mkdtemp(prefix="mdboost-shots-"))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"]
        )
        with Server(["demo", "--speedup", "300", "--state-dir", str(state / "a")]) as box:
            wait_for(forecast_ok(box, "md2"), 60, "md2's forecast")
            # The first screen: the sentence, then boost.
            shoot(browser, "first-visit", box.base + "/", chart)
            # The demo's sign-in page says where its made-up password is.
            shoot(browser, "demo-sign-in", box.base + "/login", lambda page: None)
            shoot(browser, "card-details", box.base + "/", card_in_words)
            shoot(browser, "boost-confirm", box.base + "/", confirm)
            shoot(browser, "boost-applied", box.base + "/", just_applied(box))
            shoot(browser, "boost-off", box.base + "/", turned_off(box))
            box.request("POST", "/api/revert", {})
            status, _ = box.request("POST", "/api/autotune", {})
            assert status == 200, status

            def swept() -> bool:
                sweep = box.get("/api/tuning")["autotune"]
                return sweep is not None and sweep["state"] != "running"

            wait_for(swept, 180, "the auto-tune sweep")
            shoot(browser, "auto-tuned", box.base + "/", chart)
            shoot(browser, "auto-tune-said", box.base + "/", autotune_said)
            box.request("POST", "/api/revert", {})
            status, _ = box.request("POST", "/api/presets/boost/apply", {})
            assert status == 200, status

            def effect_measured() -> bool:
                effects = box.get("/api/tuning")["effects"]
                return bool(effects) and all(e["complete"] for e in effects)

            wait_for(effect_measured, 120, "the boost's measured effect")
            shoot(browser, "boosted", box.base + "/", chart)
        # At 3000x md2's reshape, boosted once it is two effect windows old (so that its effect
        # is measured), ends within a minute; then md3 reshapes: the pool's step 2 of 2.
        with Server(["demo", "--speedup", "3000", "--state-dir", str(state / "b")]) as box:

            def old_enough() -> bool:
                now = box.get("/api/arrays/md2/forecast")["now"]
                return bool(now - runs_of(box)["md2"]["started"] > 2 * 6000)

            wait_for(old_enough, 60, "two effect windows of md2's reshape")
            status, _ = box.request("POST", "/api/presets/boost/apply", {})
            assert status == 200, status
            wait_for(lambda: "md3" in runs_of(box), 400, "md2 finished and md3 reshaping")
            wait_for(forecast_ok(box, "md3"), 60, "md3's forecast")
            shoot(browser, "shr-expansion", box.base + "/", chart)
            shoot(browser, "finished-run", f"{box.base}/runs/{runs_of(box)['md2']['id']}", chart)
        locked = ["demo", "--state-dir", str(state / "c")]
        receiver = HttpReceiver().start()
        # The receiver listens on this machine: a destination there needs ALLOW_LOCAL.
        with Server(locked, env={"MDBOOST_PASSWORD": "sofa-and-phone", **ALLOW_LOCAL}) as box:
            shoot(browser, "sign-in", box.base + "/login?next=/%23boost", lambda page: None)
            phone = f"ntfy+http://{receiver.base}/your_secret_topic"
            shoot(browser, "tell-my-phone", box.base + "/", tell_my_phone(phone))
        receiver.stop()
        browser.close()


if __name__ == "__main__":
    main()
