"""The diagnosis as the sampler computes it each tick: history events, and the API, which reads
the sampler's last tick and never /proc. The test steps the sampler's clock; nothing sleeps."""

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.clock import Timeline
from app.config import Settings
from app.kernel.host import Host
from app.live import sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.main import create_app
from app.notify import destinations, messages
from app.notify.notifier import Notifier
from app.notify.observation import Event
from app.store import db
from tests.diagnosis.moving_box import Box
from tests.kernel_tree import KernelTree
from tests.server import wait_for


@pytest.fixture
def box(tree: KernelTree) -> Box:
    return Box(tree)


@pytest.fixture
def client(box: Box, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        proc_root=box.tree.proc,
        sys_root=box.tree.sys,
        db=tmp_path / "db.sqlite",
        sample_seconds=3600,  # one tick at start-up; the test ticks by hand after it
    )
    with TestClient(create_app(settings)) as test_client:
        wait_for(lambda: test_client.app.state.sampler.latest.ts, 10, "the first tick")
        box.now = test_client.app.state.sampler.latest.ts  # the first tick ran on the wall clock
        test_client.app.state.sampler.clock = lambda: box.now
        yield test_client


def tick_for(
    the_sampler: sampler.Sampler,
    box: Box,
    seconds: float,
    snapshot_builder: SnapshotBuilder | None = None,
) -> None:
    """Tick by hand; with the app's `present`, as its sampler loop would (requests read it)."""
    end = box.now + seconds
    while box.now < end:
        box.step()
        tick = the_sampler.sample_once()
        if snapshot_builder is not None:
            snapshot_builder.update(tick)


def test_verdict_changes_are_stored_as_events_of_the_run(
    tree: KernelTree, conn: sqlite3.Connection
) -> None:
    box = Box(tree)
    the_sampler = sampler.Sampler(Host(tree.proc, tree.sys), conn, lambda: box.now)
    tick_for(the_sampler, box, 30)
    box.tree.write("sys/block/md2/md/sync_speed_max", "6500 (local)")
    tick_for(the_sampler, box, 90)
    box.tree.write("sys/block/md2/md/sync_speed_max", "200000 (system)")
    tick_for(the_sampler, box, 90)
    rows = conn.execute(
        "SELECT e.ts, e.run_id, e.detail, r.array FROM events e JOIN runs r ON r.id = e.run_id"
        " WHERE kind = 'diagnosis' ORDER BY e.id"
    ).fetchall()
    details = [json.loads(r["detail"]) for r in rows]
    assert [(d["previous"], d["verdict"]) for d in details] == [
        (None, "held_by_max"),
        ("held_by_max", None),
    ]
    assert {r["array"] for r in rows} == {"md2"}
    assert details[0]["numbers"]["max_kb_s"] == 6500
    assert details[0]["sentence"].startswith("Held by the speed limit")


def test_a_step_of_the_wall_clock_keeps_the_verdict_and_its_window(
    tree: KernelTree, conn: sqlite3.Connection
) -> None:
    """NTP steps the clock a day forward while md2 is held by its max: the window's
    rates and the verdict's streak span monotonic seconds, so the verdict and its numbers stay."""
    box = Box(tree)
    wall = {"offset": 0.0}
    timeline = Timeline(lambda: box.now + wall["offset"], lambda: box.now)
    the_sampler = sampler.Sampler(Host(tree.proc, tree.sys), conn, timeline)
    box.tree.write("sys/block/md2/md/sync_speed_max", "6500 (local)")
    tick_for(the_sampler, box, 90)
    before = the_sampler.latest.diagnoses["md2"]
    assert before.primary is not None and before.primary.verdict == "held_by_max"
    wall["offset"] = 86400.0
    tick_for(the_sampler, box, 5)
    after = the_sampler.latest.diagnoses["md2"]
    assert the_sampler.latest.clock_step == 86400.0
    assert after.primary is not None and after.primary.verdict == "held_by_max"
    assert after.primary.since == before.primary.since + 86400.0
    assert after.readings.speed_kb_s == pytest.approx(before.readings.speed_kb_s, rel=0.05)
    kinds = [r[0] for r in conn.execute("SELECT kind FROM events ORDER BY id")]
    assert kinds == ["diagnosis", "clock_step"]


def test_a_failed_write_keeps_the_events_for_the_replay(tree: KernelTree, tmp_path: Path) -> None:
    box = Box(tree)
    conn = db.connect(tmp_path / "db.sqlite")
    db.migrate(conn, Settings().migrations_dir)
    the_sampler = sampler.Sampler(Host(tree.proc, tree.sys), conn, lambda: box.now)
    box.tree.write("sys/block/md2/md/sync_speed_max", "6500 (local)")
    tick_for(the_sampler, box, 60)
    locker = db.connect(tmp_path / "db.sqlite")
    locker.execute("PRAGMA busy_timeout = 0")
    conn.execute("PRAGMA busy_timeout = 0")
    locker.execute("BEGIN IMMEDIATE")
    tick_for(the_sampler, box, 10)  # the verdict shows while the database is locked
    assert the_sampler.latest.error is not None
    locker.rollback()
    tick_for(the_sampler, box, 5)
    kinds = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'diagnosis'").fetchone()[0]
    assert kinds == 1


def test_the_api_reads_the_last_tick_and_no_kernel_file(
    client: TestClient, box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    box.disks["sdc"].wait_ms, box.disks["sdc"].busy = 60.0, 0.99
    tick_for(
        client.app.state.sampler,
        box,
        snapshot_builder=client.app.state.snapshot_builder,
        seconds=90,
    )
    opened: list[object] = []
    real_read = Host.read
    monkeypatch.setattr(
        Host, "read", lambda self, path, *a: opened.append(path) or real_read(self, path, *a)
    )
    answer = client.get("/api/arrays/md2/diagnosis").json()
    assert opened == []
    assert answer["running"] is True and answer["verdict"] == "slow_member"
    assert answer["sentence"].startswith("One slow disk: sdc takes 60 ms per request")
    shown = answer["verdicts"][0]
    assert shown["held_s"] >= 60 and shown["numbers"]["disk"] == "sdc"
    assert [m["disk"] for m in answer["readings"]["members"]] == ["sda", "sdb", "sdc", "sdd"]


def test_an_idle_array_has_no_verdict_and_an_unknown_one_is_404(client: TestClient) -> None:
    assert client.get("/api/arrays/md0/diagnosis").json() == {
        "array": "md0",
        "ts": client.app.state.sampler.latest.ts,
        "running": False,
        "verdict": None,
        "sentence": None,
    }
    assert client.get("/api/arrays/md9/diagnosis").status_code == 404


def test_the_page_says_it_in_one_sentence_with_the_evidence_behind_a_tap(
    client: TestClient, box: Box
) -> None:
    tick_for(
        client.app.state.sampler,
        box,
        snapshot_builder=client.app.state.snapshot_builder,
        seconds=30,
    )
    assert 'class="why"' not in client.get("/ui/arrays/md2").text  # nothing held a minute yet
    box.disks["sdc"].wait_ms, box.disks["sdc"].busy = 60.0, 0.99
    box.tree.write("sys/block/md2/md/stripe_cache_active", "500")  # of 513: full as well
    tick_for(
        client.app.state.sampler,
        box,
        snapshot_builder=client.app.state.snapshot_builder,
        seconds=90,
    )
    for page in (client.get("/").text, client.get("/ui/arrays/md2").text):
        why = page[page.index('<details class="why" id="why-md2">') :]
        why = why[: why.index("</details>")]
        assert "<summary>One slow disk: sdc takes 60 ms per request, 15x the other disks" in why
        assert "<caption>Each disk over the last 30 s</caption>" in why
        assert '<th scope="row">sdc</th><td>99&nbsp;%</td>' in why  # never split over two lines
        assert "<code>md2_raid5</code></dt><dd>30&nbsp;% of a core" in why
        assert (
            '<div class="also"><dt>Also</dt><dd>md&#39;s parity memory is full: 97\u00a0% of the '
            "stripe cache is in use.</dd></div>"
        ) in why


def test_metrics_export_each_members_busy_share_and_wait(client: TestClient, box: Box) -> None:
    tick_for(
        client.app.state.sampler,
        box,
        snapshot_builder=client.app.state.snapshot_builder,
        seconds=40,
    )
    text = client.get("/metrics").text
    assert 'mdboost_md_member_busy_ratio{device="md2",member="sdc5"} 0.4' in text
    assert 'mdboost_md_member_wait_seconds{device="md2",member="sda5"} 0.004' in text


def test_a_new_verdict_queues_one_notification(tree: KernelTree, tmp_path: Path) -> None:
    box = Box(tree)
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite")
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    destinations.add(conn, "https://hooks.example.org/mdboost", box.now)
    the_sampler = sampler.Sampler(Host(tree.proc, tree.sys), conn, lambda: box.now)
    notifier = Notifier(db.connect(settings.db), the_sampler.host, lambda: box.now, settings)
    box.tree.write("sys/block/md2/md/sync_speed_max", "6500 (local)")
    for _ in range(30):
        box.step()
        notifier.on_tick(the_sampler.sample_once())
    rows = conn.execute(
        "SELECT dedup_key, message FROM notify_outbox WHERE kind = 'slow_reason'"
    ).fetchall()
    assert [r["dedup_key"] for r in rows] == [f"run:1:why:held_by_max:{box.now - 145:.0f}"]
    message = json.loads(rows[0]["message"])
    assert message["title"] == "md2: held by the speed limit"
    assert "Held by the speed limit: it runs at 6.1 MB/s" in message["body"]


def test_the_notification_title_keeps_i_o_in_capitals() -> None:
    event = Event(
        "slow_reason",
        "run:3:why:yielding:100",
        "md2",
        3,
        {"action": "reshape", "verdict": "yielding", "since": 100.0, "sentence": "Held back."},
    )
    context = messages.Context("http://nas:8080/", lambda name: None, lambda: None)
    message = messages.compose(event, context)
    assert message.title == "md2: held back by other I/O on the disks"
    assert message.priority == "low" and message.click == "http://nas:8080/#array-md2"
