"""Notifications from the main page, used end to end at 360 px in Debian's
chromium against a real server and a real local receiver."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server
from tests.web.browsing import NARROW, Console, open_page, screenshot

pytestmark = pytest.mark.browser

PASSWORD = "sofa-and-phone"


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    http = HttpReceiver().start()
    yield http
    http.stop()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_tell_my_phone_from_the_main_page_at_360_px(
    browser: Browser, tmp_path: Path, receiver: HttpReceiver, scheme: str
):
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path)]
    env = {"MDBOOST_PASSWORD": PASSWORD, **ALLOW_LOCAL}
    with Server(args, env=env, log=tmp_path / "server.log") as box:
        page = open_page(browser, NARROW, scheme)
        console = Console(page)
        page.goto(box.base + "/")
        page.get_by_role("link", name="Tell my phone").click()
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(box.base + "/account#notify")
        field = page.get_by_label("Destination URL")
        url = f"ntfy+http://{receiver.base}/phone_topic_k7"
        field.fill(url)
        # What the owner typed stays readable until it is saved.
        assert field.get_attribute("type") == "text" and field.input_value() == url
        page.get_by_role("button", name="Add destination").click()
        listed = page.locator("#notify .destinations tbody tr")
        expect(listed).to_have_count(1)
        expect(listed).to_contain_text(f"ntfy+http://{receiver.base}/…c_k7")
        assert "phone_topic_k7" not in page.content()
        for name in ("Send a test", "Remove"):
            button = page.get_by_role("button", name=name)
            expect(button).to_be_visible()
            area = button.bounding_box()
            assert area is not None and area["x"] + area["width"] <= NARROW["width"], name
        assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
        page.get_by_role("button", name="Send a test").click()
        result = page.locator("#notify [role=status]")
        expect(result).to_contain_text("Test message sent to ntfy+http://")
        expect(result).to_contain_text(f"Its link opens {box.base}/")
        probes = [r for r in receiver.taken() if r.headers.get("title") == "mdboost test message"]
        assert len(probes) == 1 and probes[0].path == "/phone_topic_k7"
        assert probes[0].headers["click"] == box.base + "/"
        screenshot(page, f"tell-my-phone-360-{scheme}.png")
        assert console.errors == []
        page.context.close()
