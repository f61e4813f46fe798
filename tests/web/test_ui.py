"""The dashboard without a browser: server-rendered values, escaping, polling only while running."""

import gzip
import re

import pytest

from app.store import journal
from app.tuning.session.policy import Measuring
from tests.kernel_tree import KernelTree, mdstat_text, raid1, raid5
from tests.server import wait_for
from tests.web.ticks import after_a_tick

RESHAPE = (
    "[===>.................]  reshape = 23.4% (457230848/1953494784) "
    "finish=2130.5min speed=11704K/sec"
)
POLLING = 'hx-trigger="every 5s"'


def boxes(tree: KernelTree, md2: str) -> None:
    """A Synology-like box: DSM's system and swap arrays and one data array."""
    tree.mdstat(mdstat_text(md2, raid1("md1"), raid1("md0")))


def test_page_shows_server_rendered_values_without_javascript(tree: KernelTree, client):
    boxes(tree, raid5("md2", RESHAPE))
    wait_for(lambda: client.get("/api/runs").json()["runs"], 10, "the sampler to open a run")
    html = client.get("/").text
    assert "23.4 %" in html
    assert '<progress max="100" value="23.4"' in html
    assert "12.0 MB/s" in html  # 11704 KiB/s
    # DSM's layout: each array as Storage Manager knows it.
    assert "DSM system (md0)" in html and "DSM swap (md1)" in html
    assert ">Storage pool (md2)</h3>" in html
    assert "[UUUU]" in html and "Reshaping" in html
    # The kernel's finish=, labelled, and only under the card's Details.
    details = html.split('id="details-md2"', 1)[1].split("</details>", 1)[0]
    assert "from the last 30 s only (<code>finish=2130.5min</code> in /proc/mdstat)" in details
    assert "mdboost forecast" in html and "measuring" in html  # too little data: no number
    assert "<script>" not in html.split("</head>")[1]  # no inline scripts in the body


def test_each_member_disk_shows_dsm_s_name_its_model_and_size(tree: KernelTree, client):
    """A member is its disk as the owner bought it (model, size from sysfs) and, on a
    DSM 7 box that names disks sataN, Storage Manager's "Drive N", beside the kernel's name."""
    tree.write("sys/block/sata1/size", "7814037168\n")  # 4 TB
    tree.write("sys/block/sata1/device/model", "WDC WD40EFRX-68N\n")
    (tree.sys / "block/sata1/sata1p5").mkdir(parents=True)
    tree.write("sys/block/sdb/size", "3907029168\n")  # 2 TB
    tree.write("sys/block/sdb/device/model", "ST2000VN004-2E41\n")
    (tree.sys / "block/sdb/sdb5").mkdir(parents=True)
    md2 = raid5("md2", status="U_UU").replace(
        "sda5[0] sdb5[1] sdc5[2] sdd5[3]", "sata1p5[0] sdb5[1]"
    )
    boxes(tree, md2)
    members = wait_for(
        lambda: (
            html.split('id="members-md2"', 1)[1].split("</details>", 1)[0]
            if 'id="members-md2"' in (html := client.get("/").text) and "WDC" in html
            else None
        ),
        10,
        "md2's members with their disks",
    )
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", members))
    assert "Drive 1 WDC WD40EFRX-68N 4.0 TB sata1p5" in text, text
    assert "ST2000VN004-2E41 2.0 TB sdb5" in text and "Drive 2" not in text, text


def test_idle_healthy_arrays_collapse_and_a_degraded_one_stands_out(tree: KernelTree, client):
    boxes(tree, raid5("md2", status="UU_U"))
    after_a_tick(client)
    html = client.get("/").text
    assert re.search(r'<details class="array idle" id="array-md0">', html)
    assert '<article class="array degraded" id="array-md2"' in html
    assert "<strong>Degraded</strong>: 1 of 4 members missing" in html
    assert html.index('id="array-md2"') < html.index('id="array-md0"')  # degraded first


def test_polling_trigger_only_while_an_operation_runs(tree: KernelTree, client):
    """The running card and the boost panel poll (what is tuned changes without a press too);
    an idle box with nothing tuned polls nothing."""
    boxes(tree, raid5("md2", RESHAPE))
    after_a_tick(client)
    page = client.get("/").text
    assert page.count(POLLING) == 2
    assert POLLING in page.split('id="boost"', 1)[1].split(">", 1)[0]
    assert POLLING in client.get("/ui/arrays/md2").text
    boxes(tree, raid5("md2"))
    after_a_tick(client)
    assert POLLING not in client.get("/").text
    card = client.get("/ui/arrays/md2")
    assert card.status_code == 200 and POLLING not in card.text
    assert client.get("/ui/arrays/md9").status_code == 404


def test_everything_from_proc_is_escaped(tree: KernelTree, client):
    hostile = "<script>alert(1)</script>"
    tree.mdstat(
        mdstat_text(
            f"md2 : active raid1 {hostile}[0] sdb1[1](F)\n"
            "      2490176 blocks [2/1] [U_]\n"
            f"      {RESHAPE.replace('reshape', 'recovery')}\n"
        )
    )
    after_a_tick(client)
    for path in ("/", "/ui/arrays/md2"):
        html = client.get(path).text
        assert hostile not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "faulty" in html


def test_static_files_are_gzipped_and_the_manifest_has_its_type(client):
    response = client.get("/static/vendor/chart.umd.min.js", headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert len(gzip.compress(response.content)) < 100_000
    manifest = client.get("/static/manifest.webmanifest")
    assert manifest.headers["content-type"].startswith("application/manifest+json")
    assert {i["type"] for i in manifest.json()["icons"]} == {"image/svg+xml", "image/png"}


HTMX = {"HX-Request": "true"}


def tunable_box(tree: KernelTree) -> None:
    boxes(tree, raid5("md2", RESHAPE))
    tree.md("md2", stripe_cache_size="256", sync_action="reshape")


def test_boost_plan_then_apply_then_revert_through_the_page_endpoints(tree: KernelTree, client):
    tunable_box(tree)
    after_a_tick(client)
    assert 'aria-checked="false"' in client.get("/").text
    plan = client.post("/ui/boost/plan", headers=HTMX).text
    assert "Turn boost on?" in plan and "stripe_cache_size" in plan
    assert "256 MiB RAM" in plan and "MiB budget" in plan
    # Each change says its value before and after (PlanChange's "from", from_ in Python).
    assert '<span class="from">256 entries</span> → <span class="to">16384 entries</span>' in plan
    assert tree.read("sys/block/md2/md/stripe_cache_size") == "256\n"  # a plan writes nothing
    on = client.post("/ui/boost", data={"on": "true"}, headers=HTMX).text
    assert 'role="switch" aria-checked="true"' in on
    assert tree.read("sys/block/md2/md/stripe_cache_size") == "16384\n"
    tree.write("sys/block/md2/md/stripe_cache_size", "4096")  # DSM or a person changes it
    after_a_tick(client)
    assert "Changed outside mdboost: <strong>stripe_cache_size</strong>" in client.get("/").text
    off = client.post("/ui/revert", headers=HTMX).text
    assert 'aria-checked="false"' in off and 'id="runs" aria-labelledby="runs-h" hx-swap-oob' in off
    assert tree.read("sys/block/md2/md/stripe_cache_size") == "256\n"


def test_while_boost_is_measured_without_the_switch_says_when_it_comes_back(
    tree: KernelTree, client
):
    # The policy put boost back to measure the reshape's pace without it (pressed as the
    # reshape began): boost is not off, and the owner's Off cancels its return.
    tunable_box(tree)
    after_a_tick(client)
    client.post("/ui/boost", data={"on": "true"}, headers=HTMX)
    tuner = client.app.state.tuner
    session = journal.open_session(tuner.conn)
    reason = (
        "measuring md2's pace without boost for 5.5 minutes: no pace before the press was known"
    )
    tuner.applier.revert(reason)
    now = tuner.clock()
    tuner.policy.measuring = Measuring(session.id, "boost", ("md2",), now, now + 330, reason)
    assert client.get("/api/tuning").json()["measuring_without"]["reason"] == reason
    page = client.get("/").text
    switch = page.split('role="switch"', 1)[1].split("</button>", 1)[0]
    assert 'aria-checked="true"' in switch and "Boost is being measured, back at <time" in switch
    assert "Boost is off" not in switch
    hint = page.split('id="boost-measuring">', 1)[1].split("</p>", 1)[0]
    assert hint.startswith("md2 runs on its original values for now: no pace before the press")
    assert POLLING in page.split('id="boost"', 1)[1].split(">", 1)[0]
    off = client.post("/ui/boost", data={"on": "false"}, headers=HTMX).text
    assert 'aria-checked="false"' in off and "being measured" not in off
    assert tuner.policy.measuring is None
    assert client.get("/api/tuning").json()["measuring_without"] is None


def test_boost_works_without_javascript(tree: KernelTree, client):
    tunable_box(tree)
    page = client.post("/ui/boost/plan")
    assert page.text.startswith("<!doctype html>") and "Apply boost" in page.text
    applied = client.post("/ui/boost", data={"on": "true"}, follow_redirects=False)
    assert (applied.status_code, applied.headers["location"]) == (303, "/?done=boost-on#boost")
    assert "Boost is on" in client.get("/").text
    off = client.post("/ui/boost", data={"on": "false"})
    assert tree.read("sys/block/md2/md/stripe_cache_size") == "256\n"
    # The page it lands on says what the switch did; only known keys are echoed.
    assert "Boost is off: every setting mdboost changed holds its original value" in off.text
    assert 'id="boost-done"' not in client.get("/?done=<script>").text


def test_cross_site_posts_are_refused_and_change_nothing(tree: KernelTree, client):
    tunable_box(tree)
    before = tree.snapshot()
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        response = client.post("/ui/boost", data={"on": "true"}, headers=headers)
        assert response.status_code == 403
    assert tree.snapshot() == before


@pytest.mark.parametrize("client", [{"password": "correct horse battery"}], indirect=True)
def test_with_a_password_the_page_asks_to_sign_in_and_posts_need_a_login(tree: KernelTree, client):
    tunable_box(tree)
    before = tree.snapshot()
    assert 'href="/login?next=/%23boost">Sign in</a>' in client.get("/").text
    for path, data in (
        ("/ui/boost/plan", None),
        ("/ui/boost", {"on": "true"}),
        ("/ui/revert", None),
    ):
        assert client.post(path, data=data, headers=HTMX).status_code == 401
    assert tree.snapshot() == before


# md3 of an SHR pool, queued behind md2 (md prints resync=DELAYED whatever the queued job is).
DELAYED_MD3 = (
    "md3 : active raid5 sda6[0] sdb6[1] sdc6[2]\n"
    "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/3] [UUU]\n"
    "\tresync=DELAYED\n"
)


def test_an_shr_expansion_shows_the_pool_as_one_job(tree: KernelTree, client):
    """md2 reshaping now, md3 queued behind it (resync=DELAYED): one pool, phase 1 of 2."""
    tree.md("md3")
    boxes(tree, raid5("md2", RESHAPE) + DELAYED_MD3)
    wait_for(lambda: client.get("/api/runs").json()["runs"], 10, "the sampler to open a run")
    html = client.get("/").text
    assert 'id="pool"' in html and "Storage pool" in html
    assert "Phase <strong>1 of 2</strong>" in html
    assert "md2 now" in html and "md3 waiting" in html
    boxes(tree, raid5("md2", RESHAPE))  # a single array's job: its own card says it all
    after_a_tick(client)
    assert 'id="pool"' not in client.get("/").text


# md3 of an SHR pool after two of its members failed (md.c md_seq_show, Linux 6.12+).
BROKEN_MD3 = (
    "md3 : broken raid5 sdb6[1](F) sdc6[2](F) sda6[0]\n"
    "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/1] [U__]\n"
)


def test_a_failed_array_comes_first_even_before_a_running_one_and_says_what_to_do(
    tree: KernelTree, client
):
    tree.md("md3", degraded="2")
    boxes(tree, raid5("md2", RESHAPE) + BROKEN_MD3)
    after_a_tick(client)
    html = client.get("/").text
    assert (
        html.index('id="array-md3"') < html.index('id="array-md2"') < html.index('id="array-md0"')
    )
    assert '<article class="array failed" id="array-md3"' in html
    assert "<title>md3 FAILED · mdboost" in html
    sentence = re.sub(
        r"\s+", " ", html.split('<p class="failure" role="alert">')[1].split("</p>")[0]
    )
    assert sentence.startswith(
        "md3 has failed: its members sdb6 and sdc6 are faulty, and the data on it is not available;"
        " do not write to it, check the disks"
    )
    assert 'href="https://raid.wiki.kernel.org/index.php/RAID_Recovery"' in sentence
    assert "storage_pool_repair" in sentence
    assert "<strong>Failed</strong>" in client.get("/ui/arrays/md3").text  # its own partial too
    api = client.get("/api/arrays").json()
    assert api["failed"] == ["md3"]
    md3 = next(a for a in api["arrays"] if a["name"] == "md3")
    assert (md3["state"], md3["failed"], md3["severity"]) == ("broken", True, "critical")


# What 5.10 to 6.11 print for a raid0 whose member disk vanished: mdstat "active", no counts;
# only sysfs array_state says broken (captured: tests/fixtures/kernel*/raid0-member-unplugged).
UNPLUGGED_MD4 = "md4 : active raid0 sde1[1] sdd1[0]\n      1044480 blocks super 1.2 512k chunks\n"


def test_a_raid0_without_its_disk_is_failed_on_its_card_not_healthy(tree: KernelTree, client):
    """The card says failed as the headline does, never folded into a "healthy" line."""
    tree.md("md4", array_state="broken")
    boxes(tree, raid5("md2") + UNPLUGGED_MD4)
    after_a_tick(client)
    html = client.get("/").text
    assert "<title>md4 FAILED · mdboost" in html
    card = html.split('id="array-md4"')[0].rsplit("<", 1)[1] + html.split('id="array-md4"')[1]
    card = card.split("</article>")[0]
    assert card.startswith('article class="array failed"'), card[:200]
    assert "<strong>Failed</strong>" in card and "healthy" not in card.lower()


def test_boost_is_refused_with_409_when_the_only_data_array_has_failed(tree: KernelTree, client):
    tree.md("md3")
    tree.mdstat(mdstat_text(BROKEN_MD3, raid1("md1"), raid1("md0")))
    before = tree.snapshot()
    for path in ("/api/presets/boost/plan", "/api/presets/boost/apply"):
        response = client.post(path)
        assert response.status_code == 409, path
        assert response.json()["detail"] == {
            "message": "md3 has failed and its data is not available: mdboost never tunes a "
            "failed array. Check the disks first.",
            "failed": ["md3"],
        }
    assert client.post("/api/boost", json={"on": True}).status_code == 409
    panel = client.post("/ui/boost/plan", headers=HTMX).text
    assert '<p class="alert" role="alert">md3 has failed and its data is not available' in panel
    assert tree.snapshot() == before


def test_boost_leaves_a_failed_array_alone_and_refuses_it_by_name(tree: KernelTree, client):
    tunable_box(tree)
    tree.md("md3")
    boxes(tree, raid5("md2", RESHAPE) + BROKEN_MD3)
    plan = client.post("/api/presets/boost/plan").json()
    assert plan["arrays"] == ["md2"]
    assert "md3 has failed: mdboost leaves it alone" in plan["notes"]
    assert all(c["target"] != "md3" for c in plan["changes"])
    refused = client.post("/api/presets/boost/plan", json={"arrays": ["md2", "md3"]})
    assert refused.status_code == 409 and refused.json()["detail"]["failed"] == ["md3"]
