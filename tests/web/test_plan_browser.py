"""Plan a change on a 360 px phone, in Debian's chromium on the demo box."""

import pytest
from playwright.sync_api import Browser, expect

from tests.server import Server
from tests.web.browsing import NARROW, Console, open_page, screenshot, small_tap_targets

pytestmark = pytest.mark.browser


def test_a_phone_plans_adding_a_disk_from_the_headline(browser: Browser, server: Server):
    """At 360x740: the headline's "Plan a change" leads to the section; adding a 4 TB disk to
    the demo's SHR pool answers with the sentence, the steps in order and the capacities, all
    within the phone's width and with tap targets of at least 44 px."""
    page = open_page(browser, NARROW, "light")
    console = Console(page)
    page.goto(server.base + "/")
    page.locator("#headline .plan-link a").click()
    section = page.locator("#plan")
    expect(section).to_be_in_viewport()
    expect(section).to_contain_text("SHR-1 pool: sda, sdb, sdc, sdd")
    section.locator("input[name=disk_tb]").fill("4")
    section.locator("button[type=submit]").click()
    summary = page.locator("#plan .plan-summary")
    expect(summary).to_contain_text("Adding a 4.0 TB disk: about")
    expect(summary).to_contain_text("with boost;")
    steps = page.locator("#plan .plan-steps > li .plan-what")
    # Planned from the pool as the running expansion leaves it: md3 will span three disks.
    expect(steps).to_have_text(
        ["md2: grow raid5 on 4 to raid5 on 5 disks", "md3: grow raid5 on 3 to raid5 on 4 disks"]
    )
    expect(page.locator("#plan")).to_contain_text("it starts once that job ends")
    page.locator("#plan .plan-steps summary").first.click()
    expect(page.locator("#plan .plan-steps details").first).to_contain_text("the knee")
    # Replace, refused: a disk smaller than what sda holds.
    section = page.locator("#plan")
    section.locator("select[name=change]").select_option("replace")
    section.locator("select[name=member]").select_option("sda")
    section.locator("input[name=disk_tb]").fill("1")
    section.locator("button[type=submit]").click()
    expect(page.locator("#plan .plan-summary")).to_contain_text("not possible")
    assert small_tap_targets(page) == []
    assert console.errors == []
    screenshot(page, "plan-360.png")
