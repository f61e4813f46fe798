"""The first screen's sentence on captured kernel trees: what runs, how
far, when, whether the data is safe; boost explained when nothing runs."""

import re

from tests.kernel_tree import KernelTree, mdstat_text, raid1, raid5
from tests.server import wait_for
from tests.web.test_ui import DELAYED_MD3, RESHAPE, boxes
from tests.web.ticks import after_a_tick


def headline(html: str) -> str:
    """The sentence's text, tags and spacing stripped."""
    section = html.split('id="headline"', 1)[1].split("</section>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", section.split(">", 1)[1]).split())


def test_a_running_reshape_is_said_in_one_sentence_with_boost_right_below(tree, client):
    boxes(tree, raid5("md2", RESHAPE))
    wait_for(lambda: client.get("/api/runs").json()["runs"], 10, "the sampler to open a run")
    html = client.get("/").text
    said = headline(html)
    # DSM's layout (md0 system, md1 swap): md2 is named as Storage Manager names it.
    assert "Storage pool (md2) is growing onto the new disk: 23.4 % done ." in said
    assert "No finish time yet:" in said  # one sample: the forecast is still measuring
    # No pace, so no estimate to offer: boost is offered without a promise.
    assert "Boost may speed it up: its gain here is estimated once the pace is known." in said
    assert "Your data is safe: every disk is working." in said
    assert html.index('id="headline"') < html.index('id="boost"') < html.index('id="arrays-h"')
    assert 'role="switch"' in html.split('id="boost"', 1)[1].split("</section>", 1)[0]


def test_a_rebuild_without_redundancy_says_the_data_is_at_risk(tree: KernelTree, client):
    recovery = RESHAPE.replace("reshape", "recovery")
    boxes(tree, raid5("md2", recovery, status="UUU_"))
    after_a_tick(client)
    said = headline(client.get("/").text)
    assert "Storage pool (md2) is rebuilding onto the replacement disk: 23.4 % done" in said
    assert "Your data is readable, but Storage pool (md2) has no redundancy left" in said
    assert 'class="headline panel safety-bad"' in client.get("/").text


def test_a_failed_array_is_what_the_sentence_says_first(tree: KernelTree, client):
    broken = (
        "md3 : broken raid5 sdb6[1](F) sdc6[2](F) sda6[0]\n"
        "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/1] [U__]\n"
    )
    tree.md("md3", array_state="broken", degraded="2")
    tree.mdstat(mdstat_text(raid5("md2"), broken, raid1("md1"), raid1("md0")))
    after_a_tick(client)
    html = client.get("/").text
    assert ">Needs you now<" in html
    failed = "Storage pool (md3) has failed and the data on it is not available: see below."
    assert failed in headline(html)


def test_an_shr_pool_is_spoken_of_as_one_job(tree: KernelTree, client):
    tree.md("md3")
    boxes(tree, raid5("md2", RESHAPE) + DELAYED_MD3)
    wait_for(lambda: client.get("/api/runs").json()["runs"], 10, "the sampler to open a run")
    said = headline(client.get("/").text)
    assert "Your storage pool is growing onto the new disk (step 1 of 2: md2): 23.4 % done" in said


def test_with_nothing_running_boost_is_explained_not_offered(tree: KernelTree, client):
    boxes(tree, raid5("md2"))
    html = client.get("/").text
    said = headline(html)
    assert said.startswith("All quiet Nothing is rebuilding, reshaping or being checked.")
    assert "boost has nothing to speed up" in html
    assert 'role="switch"' not in html
    assert client.get("/ui/boost").text.count('role="switch"') == 0


def test_a_boost_still_being_measured_ends_its_line_once(tree, client):
    boxes(tree, raid5("md2", RESHAPE))
    wait_for(lambda: client.get("/api/runs").json()["runs"], 10, "the sampler to open a run")
    assert client.post("/api/boost", json={"on": True}).status_code == 200
    said = headline(client.get("/").text)
    assert "Boosted : measuring…" in said
    assert "…." not in said
