"""An owner's first day in Debian's chromium: the NAS's own name, the demo's password, and
schedules entered on a phone whose zone is not the box's."""

import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, expect

from app.formats import clock
from tests.kernel_tree import KernelTree, syncing_box
from tests.server import Server, tree_server, wait_for
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
    expect(page.locator("#headline")).to_contain_text("% done")  # the dashboard, not a refusal
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


PASSWORD = "sofa-and-phone"
PHONE_ZONE = "America/Los_Angeles"
BOX_ZONE = "Europe/Berlin"


def next_at(minute_of_day: int, now: float, zone: ZoneInfo) -> float:
    """The next time the wall clock in `zone` shows `minute_of_day` after `now`."""
    today = datetime.fromtimestamp(now, zone).date()
    for offset in range(3):
        day = today + timedelta(days=offset)
        wall = datetime(day.year, day.month, day.day, minute_of_day // 60, minute_of_day % 60)
        ts = wall.replace(tzinfo=zone).timestamp()
        if ts > now:
            return ts
    raise AssertionError("a time of day recurs within three days")


def add_schedule(page, start: str, end: str) -> None:
    form = page.locator("form.add-schedule")
    form.get_by_label("Preset").select_option("boost")
    form.get_by_label("from").fill(start)
    form.get_by_label("to").fill(end)
    form.get_by_role("button", name="Add").click()


def test_a_schedule_entered_on_a_phone_runs_at_the_phones_time_and_says_so(
    browser: Browser, tree: KernelTree, tmp_path: Path
):
    """A phone in Los Angeles, the box (the server's TZ) in Berlin, nine hours ahead, on the
    true clock (the demo's runs faster). The page
    shows times in the phone's zone and names it; a window entered there is kept in that zone:
    one around the phone's "now" applies at once (in Berlin's it would be hours away), and
    "01:00 to 07:00" next changes at 01:00 or 07:00 Los Angeles time."""
    syncing_box(tree)
    with tree_server(tree, tmp_path, TZ=BOX_ZONE, MDBOOST_PASSWORD=PASSWORD) as box:
        context = browser.new_context(viewport=PHONE, timezone_id=PHONE_ZONE)
        page = context.new_page()
        page.goto(box.base + "/login")  # tells the server the phone's zone (a cookie)
        page.get_by_label("Admin password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#schedule form.add-schedule")).to_be_visible()
        assert page.locator("html").get_attribute("data-tz") == PHONE_ZONE
        panel = page.locator("#schedule")
        expect(panel.locator(".zone-note")).to_contain_text(PHONE_ZONE)
        assert panel.locator("input[name=zone]").input_value() == PHONE_ZONE

        zone = ZoneInfo(PHONE_ZONE)
        phone_now = datetime.now(zone)
        start = (phone_now - timedelta(minutes=2)).strftime("%H:%M")
        end = (phone_now + timedelta(minutes=60)).strftime("%H:%M")
        add_schedule(page, start, end)
        expect(panel).to_contain_text(f"{start}–{end}")
        expect(panel).not_to_contain_text(f"({PHONE_ZONE})")  # the page's own zone: unsaid
        wait_for(lambda: box.get("/api/tuning")["active"], 60, "the window to apply boost")
        listed = box.get("/api/schedules")
        assert listed["zone"] == BOX_ZONE
        assert [(w["start"], w["end"], w["zone"]) for w in listed["schedules"]] == [
            (start, end, PHONE_ZONE)
        ]
        page.reload()
        expect(panel).to_contain_text("(applied)")

        panel.get_by_role("button", name="Remove").click()
        expect(panel).to_contain_text("No schedule")
        add_schedule(page, "01:00", "07:00")
        now = time.time()
        first, last = next_at(60, now, zone), next_at(7 * 60, now, zone)
        expected = min(first, last)  # 07:00 first while the window is open
        change = panel.locator(".next-change")
        expect(change.locator("time")).to_have_text(clock(expected, zone))
        expect(change).to_contain_text(f"times in {PHONE_ZONE}")
        assert box.get("/api/schedules")["next"]["ts"] == expected
        context.close()
