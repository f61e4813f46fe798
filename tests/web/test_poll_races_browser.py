"""A poll answered late must not undo what a tap did (seen in CI: the switch stayed "on" after
revert). Playwright holds chosen responses so the orders a loaded box produces happen every time."""

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.server import Server, forecast_ok, wait_for
from tests.web.browsing import PHONE, Console, open_page, wait_for_chart

pytestmark = pytest.mark.browser


def pump_until(page: Page, condition: Callable[[], Any], what: str, timeout: float = 20) -> None:
    """Let Playwright run route handlers until `condition` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(20)


class Held:
    """Requests to one path answered by the server at once but handed to the page only when
    the test says: each keeps the response the server gave when it arrived."""

    def __init__(self, page: Page, path: str, method: str) -> None:
        self.waiting: list[tuple[Route, Any]] = []
        self.method = method
        page.route("**" + path, self.on_route)

    def on_route(self, route: Route) -> None:
        if route.request.method != self.method:
            route.continue_()
            return
        self.waiting.append((route, route.fetch()))

    def release(self) -> None:
        route, response = self.waiting.pop(0)
        route.fulfill(response=response)


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    """A phone page; held requests are let go and boost is off again, whatever the test did."""
    opened = open_page(browser, PHONE, "light")
    yield opened
    opened.unroute_all(behavior="ignoreErrors")
    opened.context.close()
    if server.get("/api/tuning")["active"]:
        server.request("POST", "/api/revert", {})


def boosted_and_polling(page: Page, server: Server) -> Console:
    wait_for(forecast_ok(server, "md2"), 60, "md2's forecast")
    console = Console(page)
    page.goto(server.base + "/")
    wait_for_chart(page)
    page.get_by_role("switch").click()
    page.get_by_role("button", name="Apply boost").click()
    switch = page.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "true")
    # While boost's effect is measured the panel polls itself.
    expect(page.locator("#boost")).to_have_attribute("hx-trigger", "every 5s")
    return console


def test_a_poll_answered_while_a_revert_runs_does_not_bring_boost_back(page: Page, server: Server):
    """The panel's poll leaves while boost is on, the owner taps revert, the poll's answer
    (boost on) lands first, then the revert's. Before the fix the poll's panel replaced the one
    the revert was aimed at, the revert's answer went nowhere and the switch said "on" until
    the next poll; with polls held, forever."""
    console = boosted_and_polling(page, server)
    polls = Held(page, "/ui/boost", "GET")
    pump_until(page, lambda: polls.waiting, "the panel's poll")
    reverts = Held(page, "/ui/revert", "POST")
    page.get_by_role("button", name="Revert to the original values").click()
    pump_until(page, lambda: reverts.waiting, "the revert to reach the server")
    assert server.get("/api/tuning")["active"] is False
    assert 'aria-checked="true"' in polls.waiting[0][1].text()  # the held answer is stale
    polls.release()
    reverts.release()
    switch = page.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(page.locator("#headline .boost-line")).to_contain_text("Boost could cut it to about")
    assert console.errors == []


def test_a_card_poll_answered_after_a_revert_does_not_bring_the_boosted_sentence_back(
    page: Page, server: Server
):
    """The card's poll carries the sentence at the top out of band. One that left before the
    revert and is answered after it must not put "Boosted" back. The revert's answer replaces
    the card that sent the poll, so htmx's events of the poll reach no listener: the test
    counts the card's answers on the requests themselves ("loadend" follows htmx's "load")."""
    page.add_init_script(
        """(() => {
            const send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.send = function (...args) {
                this.addEventListener("loadend", () => {
                    if (this.responseURL.endsWith("/ui/arrays/md2")) {
                        window.cardsAnswered = (window.cardsAnswered || 0) + 1;
                    }
                });
                return send.apply(this, args);
            };
        })()"""
    )
    console = boosted_and_polling(page, server)
    cards = Held(page, "/ui/arrays/md2", "GET")
    pump_until(page, lambda: cards.waiting, "md2's card poll")
    page.get_by_role("button", name="Revert to the original values").click()
    line = page.locator("#headline .boost-line")
    expect(line).to_contain_text("Boost could cut it to about")
    assert "Boosted" in cards.waiting[0][1].text()  # the held answer really is stale
    answered = page.evaluate("() => window.cardsAnswered || 0")
    cards.release()
    page.wait_for_function(f"() => (window.cardsAnswered || 0) > {answered}", timeout=10_000)
    assert (
        "Boost could cut it to about" in line.inner_text()
    )  # as drawn once the answer was handled
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert console.errors == []


def test_a_poll_due_while_a_change_is_on_its_way_waits_for_the_changes_answer(
    page: Page, server: Server
):
    """The revert is held before it reaches the server and the panel's next poll falls due: a
    poll that left then would be answered "boost on" and, being the newer request, win over the
    revert's answer; the panel would read "on" over the reverted kernel. Polls wait for the
    change's answer, then go on. The page's clock is Playwright's, so the poll falls due when
    the test says."""
    page.clock.install()
    # Counted in the page as each request is sent, inside the timer that sends it.
    page.add_init_script(
        """(() => {
            window.sent = [];
            const open = XMLHttpRequest.prototype.open;
            const send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.open = function (method, url, ...rest) {
                this.said = method + " " + new URL(url, location.href).pathname;
                return open.call(this, method, url, ...rest);
            };
            XMLHttpRequest.prototype.send = function (...args) {
                window.sent.push(this.said);
                return send.apply(this, args);
            };
        })()"""
    )
    console = boosted_and_polling(page, server)
    page.evaluate("() => { window.sent = []; }")
    held: list[Route] = []
    page.route("**/ui/revert", lambda route: held.append(route))
    page.get_by_role("button", name="Revert to the original values").click()
    pump_until(page, lambda: held, "the revert to leave the page")
    page.clock.run_for(12_000)  # two poll intervals
    assert page.evaluate("() => window.sent") == ["POST /ui/revert"]
    assert server.get("/api/tuning")["active"] is True  # the revert has not reached the server
    held[0].continue_()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false", timeout=2_000)
    assert server.get("/api/tuning")["active"] is False
    # The card still polls: polls go on once the change is answered.
    page.clock.run_for(6_000)
    assert "GET /ui/arrays/md2" in page.evaluate("() => window.sent")
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert console.errors == []


def test_a_revert_that_gets_no_answer_or_an_error_says_not_done_beside_the_button(
    page: Page, server: Server
):
    """htmx swaps nothing on a lost answer or an error status: the tap would look ignored. The
    page says so beside the button, and the next tap goes through."""
    console = boosted_and_polling(page, server)
    revert = page.get_by_role("button", name="Revert to the original values")
    page.route("**/ui/revert", lambda route: route.abort("connectionreset"))
    revert.click()
    said = page.locator("#boost .not-done")
    expect(said).to_have_text(
        "No answer from mdboost: is the NAS reachable? It may not have been done; try again."
    )
    page.unroute("**/ui/revert")
    busy = '{"detail": "mdboost is busy: try again in 2 s"}'
    page.route(
        "**/ui/revert",
        lambda route: route.fulfill(status=503, content_type="application/json", body=busy),
    )
    revert.click()
    expect(said).to_have_text("Not done: mdboost is busy: try again in 2 s.")
    assert server.get("/api/tuning")["active"] is True  # neither reached the server
    page.unroute("**/ui/revert")
    revert.click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert server.get("/api/tuning")["active"] is False
    # The browser and htmx log the two failed requests; the page's own code threw nothing.
    assert [e for e in console.errors if e.startswith("pageerror")] == []
