"""The dashboard in Debian's headless chromium (Playwright) against the real server on the simulator."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from tests.kernel_tree import KernelTree, mdstat_text, raid1, raid5, syncing_box
from tests.server import Server, forecast_ok, tree_server, wait_for
from tests.web.browsing import (
    DESKTOP,
    FIRST_LOAD_BUDGET,
    NARROW,
    PHONE,
    Console,
    open_page,
    screenshot,
    small_tap_targets,
    wait_for_chart,
)

pytestmark = pytest.mark.browser


def test_phone_first_load_no_errors_no_overflow_under_budget(browser: Browser, server: Server):
    page = open_page(browser, PHONE, "dark")
    console = Console(page)
    finished: list[Request] = []
    page.on("requestfinished", lambda request: finished.append(request))
    page.goto(server.base + "/")
    wait_for_chart(page)
    first_load = list(finished)
    transferred = sum(
        sizes["responseBodySize"] + sizes["responseHeadersSize"]
        for sizes in (request.sizes() for request in first_load)
    )
    print(f"first load: {len(first_load)} requests, {transferred} bytes transferred")
    assert transferred <= FIRST_LOAD_BUDGET
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for target in page.locator("button, summary, a.button").all():
        if target.is_visible():
            assert target.bounding_box()["height"] >= 44, target.inner_text()
    screenshot(page, "phone.png")
    assert console.errors == []
    page.context.close()


def test_percent_advances_and_the_chart_appends(browser: Browser, server: Server):
    page = open_page(browser, DESKTOP, "light")
    console = Console(page)
    page.goto(server.base + "/")
    wait_for_chart(page)
    percent = page.locator("#percent-md2")
    first = percent.inner_text()
    page.evaluate("window.firstChart = Chart.getChart(document.querySelector('canvas'))")
    points = page.evaluate("firstChart.data.datasets[0].data.length")
    expect(percent).not_to_have_text(first, timeout=20_000)
    assert float(percent.inner_text().rstrip(" %")) > float(first.rstrip(" %"))
    page.wait_for_function(
        "n => { const c = Chart.getChart(document.querySelector('canvas'));"
        " return c === window.firstChart && c.data.datasets[0].data.length > n; }",
        arg=points,
        timeout=20_000,
    )
    screenshot(page, "desktop.png")
    assert console.errors == []
    page.context.close()


def latest_speed(page: Page) -> float:
    """The newest speed point on the chart (MB/s)."""
    return float(
        page.evaluate(
            "() => { const d = Chart.getChart(document.querySelector('canvas')).data.datasets[1].data;"
            " return d[d.length - 1].y; }"
        )
    )


def test_boost_confirm_raises_speed_on_the_chart_and_revert_restores(
    browser: Browser, server: Server
):
    page = open_page(browser, PHONE, "light")
    console = Console(page)
    page.goto(server.base + "/")
    wait_for_chart(page)
    before = latest_speed(page)
    switch = page.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "false")
    switch.click()
    plan = page.locator("#boost form.confirm")
    # People's words first, the new finish time from the forecast's
    # boost estimate, and the kernel's names behind Details.
    expect(plan).to_contain_text(
        "File sharing, Photos and Plex will be slower until you turn it off"
    )
    expect(plan).to_contain_text("MiB of memory")  # RAM in MiB everywhere on the page
    expect(plan.locator(".estimate")).to_contain_text("It should then finish around")
    expect(plan.get_by_text("stripe_cache_size")).to_be_hidden()
    plan.get_by_text("Details: the kernel settings it changes").click()
    expect(plan.get_by_text("stripe_cache_size")).to_be_visible()
    expect(plan).to_contain_text("MiB")
    screenshot(page, "phone-boost-confirm.png")
    page.get_by_role("button", name="Apply boost").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    expect(page.locator("ol.markers li")).to_have_count(1)
    page.wait_for_function(
        "floor => { const d = Chart.getChart(document.querySelector('canvas')).data.datasets[1].data;"
        " return d[d.length - 1].y > floor; }",
        arg=before * 2,
        timeout=30_000,
    )
    screenshot(page, "phone-boost-on.png")
    page.get_by_role("button", name="Revert to the original values").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert server.get("/api/tuning")["active"] is False
    assert console.errors == []
    page.context.close()


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def rects(page: Page, selector: str) -> list[dict[str, float]]:
    """The boxes of every element `selector` finds, read in one go in the page."""
    return page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; })",
    )


def test_chart_flags_are_numbered_like_the_list_and_never_overlap_at_360_px(
    browser: Browser, tmp_path: Path
):
    """Boost, revert and boost again within moments: three flags side by side."""
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path)]
    with Server(args) as fresh:
        page = open_page(browser, NARROW, "light")
        console = Console(page)
        page.goto(fresh.base + "/")
        wait_for_chart(page)
        for _ in range(2):
            page.get_by_role("switch").click()
            page.get_by_role("button", name="Apply boost").click()
            expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
            page.get_by_role("button", name="Revert to the original values").click()
            expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
        items = page.locator("ol.markers li")
        expect(items).to_have_count(4)
        flags = page.locator(".chart-box .flag-marker:not(.flag-restart)")
        expect(flags).to_have_count(4)
        assert flags.all_inner_texts() == ["1", "2", "3", "4"]
        # One reading of every box: a poll may redraw the flags between two separate reads.
        boxes = rects(page, ".chart-box .flag-marker:not(.flag-restart)")
        (chart,) = rects(page, ".chart-box")
        assert len(boxes) == 4
        for i, box in enumerate(boxes):
            assert box["width"] >= 44 and box["height"] >= 44
            assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
            for other in boxes[i + 1 :]:
                assert not overlaps(box, other), (box, other)
        listed = rects(page, "ol.markers li")
        for i, box in enumerate(listed):
            for other in listed[i + 1 :]:
                assert not overlaps(box, other)
        second = items.nth(1).inner_text()
        assert "reverted" in second
        flags.nth(1).click()
        tip = page.locator(".flag-tip")
        expect(tip).to_be_visible()
        expect(tip).to_have_text("2. " + second)
        assert flags.nth(1).get_attribute("title") == second
        assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
        screenshot(page, "phone-360-chart-flags.png")
        assert console.errors == []
        page.context.close()


# Records, from now on, every layout shift and every change made inside a <time> already on the
# page (a rewrite after render is a flicker).
WATCH_SHIFTS_AND_TIMES = """() => {
  window.shifts = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (!entry.hadRecentInput) window.shifts.push(entry.value);
  }).observe({ type: "layout-shift", buffered: false });
  window.timeRewrites = [];
  new MutationObserver((records) => {
    for (const r of records) {
      const target = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (target && target.closest("time")) window.timeRewrites.push(target.closest("time").outerHTML);
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""
POLL_MD2 = (
    "() => htmx.ajax('GET', '/ui/arrays/md2', {target: '#array-md2', swap: 'outerHTML'})"
    ".then(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))))"
)


def test_a_minute_of_polls_keeps_sections_open_times_final_and_nothing_moving(
    browser: Browser, server: Server
):
    """Twelve polls of the md2 card (a minute at every 5 s), driven directly;
    each brings the sentence at the top too, which must not move anything either."""
    wait_for(forecast_ok(server, "md2"), 60, "md2's forecast")  # then the sentence keeps its shape
    page = open_page(browser, PHONE, "light")
    console = Console(page)
    page.goto(server.base + "/")  # the first visit tells the server the browser's zone
    page.goto(server.base + "/")
    wait_for_chart(page)
    tz = page.evaluate("() => Intl.DateTimeFormat().resolvedOptions().timeZone")
    assert page.locator("html").get_attribute("data-tz") == tz
    members = page.locator("#members-md2")
    members.locator("summary").click()
    expect(members).to_have_attribute("open", "")
    page.locator("#array-md3 summary").click()
    asof = page.locator("#asof time")
    first_asof = asof.get_attribute("data-ts")
    layout = "() => ['#headline', '#array-md2', '#boost', '.chart-box', '#array-md3'].map((s) => { const r = document.querySelector(s).getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })"
    # The finish is said in words ("about 4 days", "between Sat evening and Wed morning"):
    # when the words change, a line may wrap differently. Nothing else may move.
    words = "() => ['#headline', '#array-md2 .eta', '#array-md2 .eta-boost'].map((s) => document.querySelector(s).innerText.replace(/[0-9]/g, '0'))"
    page.evaluate(WATCH_SHIFTS_AND_TIMES)
    before, said, steady = page.evaluate(layout), page.evaluate(words), 0
    for _ in range(12):
        page.evaluate(POLL_MD2)
        expect(members).to_have_attribute("open", "")
        expect(page.locator("#array-md3")).to_have_attribute("open", "")
        if page.evaluate(words) == said:
            assert page.evaluate(layout) == before
            steady += 1
        else:
            before, said = page.evaluate(layout), page.evaluate(words)
            page.evaluate("() => { window.shifts = []; }")
    assert steady >= 6, "the words changed on most polls: the layout was hardly checked"
    assert asof.get_attribute("data-ts") != first_asof
    assert page.locator("#asof").count() == 1
    assert page.evaluate("window.timeRewrites") == []
    assert page.evaluate("window.shifts") == []
    for text in page.locator("#array-md2 time").all_text_contents():  # Details too
        assert len(text.split()) == 4 and ":" in text, text  # "Mon 23 Nov 09:40", final form
    assert console.errors == []
    page.context.close()


def test_every_tap_target_is_at_least_44_px_on_every_page(
    browser: Browser, server: Server, tmp_path: Path
):
    """At 360 px: dashboard, sign-in, account (a token, Revoke asked),
    set-up and an error page; the header's Sign in brings the owner back to the boost panel."""
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path / "locked")]
    with Server(args, env={"MDBOOST_PASSWORD": "sofa-and-phone"}) as locked:
        page = open_page(browser, NARROW, "light")
        console = Console(page)
        page.goto(locked.base + "/")
        wait_for_chart(page)
        page.locator("#members-md2 summary").click()
        assert small_tap_targets(page) == []
        page.locator("header.top").get_by_role("link", name="Sign in").click()
        assert small_tap_targets(page) == []
        field = page.get_by_label("Admin password")
        assert field.bounding_box()["width"] >= 300  # a full-width field, its label above it
        assert page.locator("label[for=password]").bounding_box()["y"] < field.bounding_box()["y"]
        screenshot(page, "phone-360-sign-in.png")
        field.fill("sofa-and-phone")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(locked.base + "/#boost")
        expect(page.locator("#boost")).to_contain_text("Signed in as admin")
        assert small_tap_targets(page) == []
        page.locator("header.top").get_by_role("link", name="Account").click()
        page.get_by_label("Name of the new token").fill("backup script")
        page.get_by_role("button", name="Create token").click()
        token = page.locator("#new-token")
        assert token.input_value()
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.get_by_role("button", name="Copy").click()
        expect(page.get_by_role("button", name="Copied")).to_be_visible()
        assert page.evaluate("() => navigator.clipboard.readText()") == token.input_value()
        assert small_tap_targets(page) == []
        page.get_by_text("Revoke…").click()
        expect(page.get_by_role("button", name="Revoke “backup script”")).to_be_visible()
        assert small_tap_targets(page) == []
        screenshot(page, "phone-360-account.png")
        page.get_by_role("button", name="Revoke “backup script”").click()
        expect(page.locator("table")).to_contain_text("revoked")
        page.goto(locked.base + "/no-such-page")
        assert small_tap_targets(page) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
        assert [e for e in console.errors if "404" not in e] == []
        page.context.close()
    page = open_page(browser, NARROW, "dark")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    tree = KernelTree(fresh / "kernel")
    syncing_box(tree)
    with tree_server(tree, fresh) as unset:  # a real box with no password yet
        page.goto(unset.base + "/setup")
        assert small_tap_targets(page) == []
        first = page.get_by_label("Password (at least 8 characters)").bounding_box()
        second = page.locator("label[for=confirm]").bounding_box()
        assert second["y"] >= first["y"] + first["height"]  # its label sits below field one
        screenshot(page, "phone-360-dark-set-up.png")
    page.context.close()


def test_pages_work_with_javascript_off(browser: Browser, server: Server):
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(server.base + "/")
    expect(page.locator("#percent-md2")).to_contain_text("%")
    expect(page.locator("#array-md2")).to_contain_text("finish=")
    context.close()


def test_boost_boost_off_and_revert_without_javascript(browser: Browser, server: Server):
    """Plain form posts (Origin: null under no-referrer) pass the same-origin guard."""
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(server.base + "/")
    switch = page.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "false")
    switch.click()
    expect(page.locator("#boost form.confirm")).to_contain_text("stripe_cache_size")
    page.get_by_role("button", name="Apply boost").click()
    expect(page).to_have_url(server.base + "/?done=boost-on#boost")
    expect(page.locator("#boost-done")).to_contain_text("Boost is on")
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    assert server.get("/api/tuning")["active"] is True
    page.get_by_role("switch").click()  # "boost off"
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert server.get("/api/tuning")["active"] is False
    page.get_by_role("switch").click()
    page.get_by_role("button", name="Apply boost").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    page.get_by_role("button", name="Revert to the original values").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    assert server.get("/api/tuning")["active"] is False
    assert "cross-site" not in page.content()
    context.close()


def test_api_docs_render_from_local_files_under_the_csp(browser: Browser, server: Server):
    """Swagger UI is vendored; nothing loads from elsewhere, the CSP refuses nothing."""
    page = open_page(browser, DESKTOP, "light")
    console = Console(page)
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(request.url.split("/")[2]))
    page.goto(server.base + "/")
    page.get_by_role("link", name="API docs").click()
    expect(page.locator("#swagger-ui .opblock-tag").first).to_be_visible()
    expect(page.locator("#swagger-ui")).to_contain_text("/api/tuning")
    assert hosts == {server.base.split("/")[2]}
    assert console.errors == []
    assert page.goto(server.base + "/redoc").status == 404
    page.context.close()


def test_sign_in_then_boost_from_the_page(browser: Browser, tmp_path: Path):
    """With a password set, the page asks to sign in; after signing in the toggle works."""
    args = ["demo", "--speedup", "300", "--state-dir", str(tmp_path)]
    with Server(args, env={"MDBOOST_PASSWORD": "sofa-and-phone"}) as locked:
        page = open_page(browser, PHONE, "light")
        console = Console(page)
        page.goto(locked.base + "/")
        expect(page.locator("#boost")).to_contain_text("Changing tuning needs the admin password")
        page.locator("#boost").get_by_role("link", name="Sign in").click()
        page.get_by_label("Admin password").fill("wrong password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("Wrong password")
        # Chromium logs the failed login's 401 status as a console error: expected, and only that.
        assert [e for e in console.errors if "401" not in e] == []
        console.errors.clear()
        page.get_by_label("Admin password").fill("sofa-and-phone")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(locked.base + "/#boost")  # back where the owner tapped
        expect(page.locator("#boost")).to_contain_text("Signed in as admin")
        page.get_by_role("switch").click()
        page.get_by_role("button", name="Apply boost").click()
        expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
        assert locked.get("/api/tuning")["active"] is True
        page.get_by_role("button", name="Revert to the original values").click()
        expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
        assert console.errors == []
        page.context.close()


def test_a_failed_array_is_first_and_alarming_on_a_phone_and_boost_on_it_is_refused(
    browser: Browser, tree: KernelTree, tmp_path: Path
):
    """md3 broken (Linux 6.12+ mdstat) beside healthy DSM and data arrays."""
    broken_md3 = (
        "md3 : broken raid5 sdb6[1](F) sdc6[2](F) sda6[0]\n"
        "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/1] [U__]\n"
    )
    tree.mdstat(mdstat_text(raid5("md2"), broken_md3, raid1("md1"), raid1("md0")))
    for name in ("md0", "md1", "md2"):
        tree.md(name, array_state="clean")
    tree.md("md3", array_state="broken", degraded="2")
    with tree_server(
        tree, tmp_path, MDBOOST_API_TOKEN="browser-test-token-0123456789abcdef0123456789"
    ) as server:
        page = open_page(browser, PHONE, "light")
        console = Console(page)
        page.goto(server.base + "/setup")  # no password yet: the first visit offered set-up
        page.goto(server.base + "/")
        cards = page.locator("section.arrays .array")
        assert cards.evaluate_all("cards => cards.map(c => c.id)") == [
            "array-md3",
            "array-md2",
            "array-md1",
            "array-md0",
        ]
        md3 = page.locator("#array-md3")
        box = md3.bounding_box()
        assert box is not None
        assert box["y"] + 80 < PHONE["height"]  # seen without scrolling
        for other in cards.all()[1:]:
            assert box["y"] + box["height"] <= other.bounding_box()["y"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        style = md3.evaluate(
            "el => { const s = getComputedStyle(el); return [s.borderTopColor,"
            " s.borderLeftWidth, s.backgroundColor]; }"
        )
        healthy = page.locator("#array-md2").evaluate("el => getComputedStyle(el).backgroundColor")
        assert style == ["rgb(198, 40, 40)", "10px", "rgb(253, 236, 236)"]  # --bad, --bad-bg
        assert healthy != style[2]
        alert = md3.get_by_role("alert")
        expect(alert).to_contain_text("md3 has failed: its members sdb6 and sdc6 are faulty")
        expect(alert).to_contain_text("the data on it is not available; do not write to it")
        expect(alert.get_by_role("link", name="RAID Recovery")).to_be_visible()
        expect(alert.get_by_role("link", name="Repair a storage pool")).to_be_visible()
        assert alert.bounding_box()["y"] < PHONE["height"]
        assert page.title().startswith("md3 FAILED")
        screenshot(page, "phone-failed-array.png")
        assert console.errors == []
        page.context.close()
        status, body = server.request("POST", "/api/presets/boost/apply", {"arrays": ["md3"]})
        assert status == 409
        assert body["detail"]["failed"] == ["md3"]
        assert body["detail"]["message"].startswith("md3 has failed and its data is not available")
        assert server.get("/api/tuning")["active"] is False
