"""An owner's first day in Debian's chromium: the NAS's own name, the demo's password."""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.server import Server
from tests.web.browsing import CHROMIUM_ARGS, PHONE, open_page, small_tap_targets

pytestmark = pytest.mark.browser

NAS = "diskstation:8080"  # DSM's default name for a NAS, on the port compose.yaml publishes
ELSEWHERE = "nas.example.org:8080"  # a dotted name nobody added to MDBOOST_ALLOWED_HOSTS


@pytest.fixture(scope="module")
def named_browser(chromium: str, browser: Browser, server: Server) -> Iterator[Browser]:
    """A chromium that finds the demo at http://diskstation:8080 and http://nas.example.org:8080,
    as a LAN's DNS would: the browser sends those names, ports included, as Host."""
    rules = ", ".join(f"MAP {name} 127.0.0.1:{server.port}" for name in (NAS, ELSEWHERE))
    launched = browser.browser_type.launch(
        executable_path=chromium,
        headless=True,
        args=[*CHROMIUM_ARGS, f"--host-resolver-rules={rules}"],
    )
    yield launched
    launched.close()


def test_the_nas_by_its_own_name_shows_the_page(named_browser: Browser):
    page = open_page(named_browser, PHONE, "light")
    answer = page.goto(f"http://{NAS}/")
    assert answer is not None and answer.status == 200
    assert answer.request.all_headers()["host"] == NAS
    expect(page.locator("#headline")).to_contain_text("Storage pool (md2)")
    page.context.close()


def test_a_refused_name_gets_a_styled_page_saying_how_to_add_it(named_browser: Browser):
    page = open_page(named_browser, PHONE, "dark")
    answer = page.goto(f"http://{ELSEWHERE}/")
    assert answer is not None and answer.status == 403
    assert answer.headers["content-type"].startswith("text/html")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text('MDBOOST_ALLOWED_HOSTS: "nas.example.org"')
    expect(alert).to_contain_text("the NAS's own name")
    # The stylesheet loads under the refused name too: a page, not bare text.
    assert page.locator("main.narrow").evaluate("m => getComputedStyle(m).maxWidth") != "none"
    assert small_tap_targets(page) == []
    page.context.close()


def test_the_demos_sign_in_page_says_where_its_password_is(browser: Browser, tmp_path: Path):
    log = tmp_path / "server.log"
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path / "demo")]
    with Server(args, log=log) as demo:
        page = open_page(browser, PHONE, "light")
        page.goto(demo.base + "/")
        page.get_by_role("link", name="Tell my phone").click()
        note = page.locator("#demo-password")
        expect(note).to_contain_text("need the admin password")
        expect(note).to_contain_text("mdboost demo")
        # The line the page points at is in the log, and its password signs in.
        found = re.search(r"need the admin password (\S+)", log.read_text())
        assert found is not None, log.read_text()
        page.get_by_label("Admin password").fill(found.group(1))
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(re.compile(r"/account#notify$"))
        page.context.close()
