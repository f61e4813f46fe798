"""The first phone screen and finished runs in Debian's chromium."""

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from app.formats import duration, ratio
from tests.server import Server, forecast_ok, runs_of, wait_for
from tests.web.browsing import (
    CHART_READY,
    NARROW,
    PHONE,
    Console,
    open_page,
    screenshot,
    small_tap_targets,
    wait_for_chart,
)

pytestmark = pytest.mark.browser


def in_first_screen(page: Page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    viewport = page.viewport_size
    assert box is not None and viewport is not None
    return box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]


def test_the_first_phone_screen_says_it_all_and_boosts_right_there(
    browser: Browser, server: Server
):
    """At 390x844 and 360x740: the sentence (what, how far, when with its range, is the data
    safe) and the boost switch, without scrolling; boost from there shows the confirmation in
    view, and once on the sentence says "Boosted" with the measured effect."""
    wait_for(forecast_ok(server, "md2"), 60, "md2's forecast")
    for viewport in (PHONE, NARROW):
        page = open_page(browser, viewport, "light")
        page.goto(server.base + "/")
        wait_for_chart(page)
        sentence = page.locator("#headline .sentence")
        expect(sentence).to_contain_text(
            "Your storage pool is growing onto the new disk (step 1 of 2: md2)"
        )
        assert re.search(r"\d+\.\d % done", sentence.inner_text())
        expect(sentence).to_contain_text("It should finish")
        expect(sentence).to_contain_text("likely ")
        expect(sentence).to_contain_text("Your data is safe: every disk is working.")
        # How long in words with the date beside it, the range in words.
        assert re.search(
            r"finish in about \d+(\.5)? (days|hours) \(\w{3} \d\d \w{3} \d\d:\d\d\)",
            sentence.inner_text(),
        ), sentence.inner_text()
        # formats.when's words: "early Fri", "tomorrow evening", or a date past six days.
        day = r"(tonight|this \w+|(early )?\w+( \w+)?|\w{3} \d\d \w{3})"
        ranged = rf"likely (between {day} and {day}|around {day}) \(\d+ times in \d+\)"
        assert re.search(ranged, sentence.inner_text()), sentence.inner_text()
        expect(page.locator("#headline .boost-line")).to_contain_text("Boost could cut it to about")
        assert in_first_screen(page, "#headline")
        assert in_first_screen(page, "#boost [role=switch]")
        # The kernel's finish= only under the card's Details.
        kernel = page.locator("#array-md2 .kernel")
        expect(kernel).to_be_hidden()
        page.locator("#details-md2 > summary").click()
        expect(kernel).to_be_visible()
        expect(kernel).to_contain_text("from the last 30 s only")
        assert small_tap_targets(page) == []
        # What says how sure a figure is reads at body size.
        sizes = page.locator("#array-md2 .facts small").evaluate_all(
            "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        body = page.evaluate("() => parseFloat(getComputedStyle(document.body).fontSize)")
        assert len(sizes) >= 3 and min(sizes) >= body, (sizes, body)
        screenshot(page, f"first-screen-{viewport['width']}.png")
        page.context.close()
    page = open_page(browser, PHONE, "dark")
    console = Console(page)
    page.goto(server.base + "/")
    wait_for_chart(page)
    page.get_by_role("switch").click()
    expect(page.locator("#boost form.confirm")).to_be_visible()
    assert in_first_screen(page, "#boost form.confirm h3")
    page.get_by_role("button", name="Apply boost").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    line = page.locator("#headline .boost-line")
    expect(line).to_contain_text("Boosted")
    # The card's poll brings the sentence back with the effect once it is measured.
    expect(line).to_contain_text(
        re.compile(r"Boosted: \d+\.\d → \d+\.\d MB/s, ×\d"), timeout=30_000
    )
    page.evaluate("() => window.scrollTo(0, 0)")
    assert in_first_screen(page, "#headline .boost-line")
    screenshot(page, "first-screen-boosted.png")
    page.get_by_role("button", name="Revert to the original values").click()
    expect(page.get_by_role("switch")).to_have_attribute("aria-checked", "false")
    expect(line).to_contain_text("Boost could cut it to about")
    assert console.errors == []
    page.context.close()


def test_the_first_screen_boosts_without_javascript(browser: Browser, server: Server):
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(server.base + "/")
    assert in_first_screen(page, "#headline .sentence")
    assert in_first_screen(page, "#boost [role=switch]")
    page.get_by_role("switch").click()
    page.get_by_role("button", name="Apply boost").click()
    expect(page).to_have_url(server.base + "/?done=boost-on#boost")
    expect(page.locator("#headline .boost-line")).to_contain_text("Boosted")
    assert server.get("/api/tuning")["active"] is True
    page.get_by_role("button", name="Revert to the original values").click()
    expect(page.locator("#headline .boost-line")).to_contain_text("Boost could cut it to about")
    assert server.get("/api/tuning")["active"] is False
    context.close()


def test_an_shr_expansion_a_finished_run_and_nothing_left_to_boost(
    browser: Browser, tmp_path: Path
):
    """Boosted at 3000x, md2 finishes and md3 reshapes: the sentence speaks for the pool (step 2
    of 2) with the whole job's finish; md2's run stays listed as "Finished <day> after <time>,
    boosted ×N" and opens its own chart and markers. Once md3 is done too, boost is explained,
    not offered."""
    args = ["demo", "--speedup", "3000", "--state-dir", str(tmp_path)]
    with Server(args, log=tmp_path / "server.log") as box:
        # The demo's effect window holds 10 samples (100 simulated minutes here): boost once
        # the run is older than that, so that its effect can be measured.
        def old_enough() -> bool:
            now = box.get("/api/arrays/md2/forecast")["now"]
            return bool(now - runs_of(box)["md2"]["started"] > 2 * 6000)

        wait_for(old_enough, 60, "two effect windows of md2's reshape")
        status, _ = box.request("POST", "/api/presets/boost/apply", {})
        assert status == 200

        def measured_on(run_id: int | None) -> list[dict]:
            """Boost's effects on the run measured from the untuned pace: what its list shows
            (the latest of them), as opposed to another apply still measuring in that run."""
            return [
                e
                for e in box.get("/api/tuning")["effects"]
                if e["run_id"] == run_id
                and e["preset"] == "boost"
                and e["complete"]
                and e["ratio"]
                and e["over"] is None
            ]

        def md2_done_and_measured() -> bool:
            runs = runs_of(box)
            md2 = runs.get("md2", {})
            return (
                md2.get("outcome") == "completed"
                and "md3" in runs
                and bool(measured_on(md2.get("id")))
            )

        wait_for(md2_done_and_measured, 240, "md2's reshape to end with its boost measured")
        context = browser.new_context(viewport=PHONE, timezone_id="UTC")
        page = context.new_page()
        console = Console(page)
        wait_for(forecast_ok(box, "md3"), 60, "md3's forecast")
        page.goto(box.base + "/")
        sentence = page.locator("#headline .sentence")
        expect(sentence).to_contain_text("Your storage pool is growing onto the new disk")
        expect(sentence).to_contain_text("(step 2 of 2: md3)")
        expect(sentence).to_contain_text("It should finish")
        pool = box.get("/api/pool/forecast")["pool"]
        assert pool["status"] == "ok" and pool["phase"] == 2
        assert in_first_screen(page, "#headline")
        md2 = runs_of(box)["md2"]
        effect = max(measured_on(md2["id"]), key=lambda e: e["applied_at"])
        day = time.strftime("%a %d %b", time.gmtime(md2["finished"]))
        expected = (
            f"Finished {day} after {duration(md2['duration_s'])}, boosted ×{ratio(effect['ratio'])}"
        )
        row = page.locator("#runs tr", has=page.get_by_role("link", name="md2 reshape"))
        expect(row.locator(".outcome")).to_have_text(expected)
        screenshot(page, "shr-expansion-phone.png")
        row.get_by_role("link", name="md2 reshape").click()
        expect(page).to_have_url(f"{box.base}/runs/{md2['id']}")
        expect(page.locator("#run-outcome")).to_have_text(expected + ".")
        page.wait_for_function(CHART_READY)
        points = page.evaluate(
            "() => Chart.getChart(document.querySelector('canvas')).data.datasets[0].data"
        )
        assert points[-1]["x"] <= md2["finished"] * 1000 and points[-1]["y"] > 95
        markers = page.locator("ol.markers li")
        assert markers.count() >= 1
        expect(markers.first).to_contain_text("boost")
        expect(page.locator(".chart-box .flag-marker:not(.flag-restart)")).to_have_count(
            markers.count()
        )
        assert small_tap_targets(page) == []
        screenshot(page, "finished-run-page.png")

        status, _ = box.request("POST", "/api/presets/boost/apply", {})  # md3's turn
        assert status == 200

        def all_done() -> bool:
            # ... and boost reverted by itself once the tuned array's reshape ended.
            done = runs_of(box)["md3"]["outcome"] == "completed"
            return done and box.get("/api/tuning")["active"] is False

        wait_for(all_done, 240, "md3 to end and boost to revert")
        page.goto(box.base + "/")
        expect(sentence).to_contain_text("Nothing is rebuilding, reshaping or being checked.")
        expect(sentence).to_contain_text("The last job, md3's reshape: Finished")
        expect(page.locator("#boost-idle")).to_contain_text("boost has nothing to speed up")
        expect(page.get_by_role("switch")).to_have_count(0)
        assert small_tap_targets(page) == []
        page.get_by_role("link", name="Its chart and changes").click()
        expect(page).to_have_url(re.compile(r"/runs/\d+$"))
        md3 = runs_of(box)["md3"]
        measured = measured_on(md3["id"])
        outcome = page.locator("#run-outcome")
        expect(outcome).to_contain_text("boosted")
        # A gain is quoted only when measured from the untuned pace: md2's session
        # may still hold md3's knobs when md3's boost comes, and then "×1" would be no gain.
        if measured:
            effect = max(measured, key=lambda e: e["applied_at"])
            expect(outcome).to_contain_text(f"boosted ×{ratio(effect['ratio'])}")
        else:
            assert "×" not in outcome.inner_text()
        assert console.errors == []
        context.close()
