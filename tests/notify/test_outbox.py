"""The outbox against a real receiver: order, retries with backoff, dedup, the flood summary."""

import sqlite3
from pathlib import Path

import pytest

from app.notify import destinations, outbox
from app.notify.delivery import Deliverer, DeliveryRules
from app.notify.senders import Message
from app.store import db
from app.store import notify as stored
from tests import PROJECT_ROOT
from tests.notify.receivers import HttpReceiver


class WallClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def queue(conn: sqlite3.Connection, keys: list[str], clock: WallClock) -> None:
    with db.write_transaction(conn):
        for key in keys:
            message = Message(key, "milestone", f"title {key}", f"body {key}")
            outbox.enqueue(conn, message, stored.active_destination_ids(conn), 0.0, clock())


def delivered_keys(receiver: HttpReceiver) -> list[str]:
    return [r.json()["key"] for r in receiver.taken()]


@pytest.fixture
def receiver():
    http = HttpReceiver().start()
    yield http
    http.stop()


def test_a_receiver_down_for_a_while_gets_every_event_once_in_order(conn, receiver):
    clock = WallClock()
    destinations.add(conn, f"http://{receiver.base}/hook", clock(), allow_local=True)
    deliverer = Deliverer(
        conn, DeliveryRules(first_retry_s=5, max_retry_s=40, allow_local=True), clock
    )
    receiver.status = 503
    queue(conn, ["a", "b", "c"], clock)
    delays = []
    for _ in range(6):
        assert deliverer.pass_once() == 0
        head = stored.heads(conn)[0]
        assert head.dedup_key == "a"  # the head waits: nothing overtakes it
        delays.append(head.next_attempt - clock())
        clock.now = head.next_attempt
    assert delays[:4] == [5, 10, 20, 40]  # exponential, capped
    queue(conn, ["a", "d"], clock)  # "a" again: one event, one message
    receiver.stop()  # from 503 to a closed port
    clock.now += 100
    assert deliverer.pass_once() == 0
    receiver.status = 200
    receiver.start()
    clock.now += 100
    while deliverer.pass_once():
        pass
    assert delivered_keys(receiver) == ["a", "b", "c", "d"]
    row = conn.execute(
        "SELECT attempts, last_error FROM notify_outbox WHERE dedup_key='a'"
    ).fetchone()
    assert row["attempts"] > 6 and row["last_error"] is None
    assert deliverer.pass_once() == 0 and delivered_keys(receiver) == ["a", "b", "c", "d"]


def test_one_destination_down_does_not_hold_back_another(conn, receiver):
    clock = WallClock()
    other = HttpReceiver().start()
    try:
        destinations.add(conn, f"http://{receiver.base}/hook", clock(), allow_local=True)
        destinations.add(conn, f"http://{other.base}/hook", clock(), allow_local=True)
        other.stop()
        deliverer = Deliverer(conn, DeliveryRules(allow_local=True), clock)
        queue(conn, ["a", "b"], clock)
        while deliverer.pass_once():
            pass
        assert delivered_keys(receiver) == ["a", "b"]
        pending = conn.execute(
            "SELECT COUNT(*) FROM notify_outbox WHERE state='pending'"
        ).fetchone()
        assert pending[0] == 2
        listing = stored.destination_statuses(conn)
        assert [d.pending for d in listing] == [0, 2]
        assert "cannot reach" in listing[1].last_error
    finally:
        other.stop()


def test_pending_messages_survive_a_restart_of_the_deliverer(tmp_path: Path, receiver):
    clock = WallClock()
    path = tmp_path / "mdboost.db"
    first = db.connect(path)
    db.migrate(first, PROJECT_ROOT / "migrations")
    destinations.add(first, f"http://{receiver.base}/hook", clock(), allow_local=True)
    queue(first, ["a", "b"], clock)
    before_crash = Deliverer(first, DeliveryRules(allow_local=True), clock)
    url, job = before_crash.due()[0]
    assert before_crash.attempt(url, job)  # "a" went out; then the process died
    first.close()
    second = db.connect(path)
    while Deliverer(second, DeliveryRules(allow_local=True), clock).pass_once():
        pass
    assert delivered_keys(receiver) == ["a", "b"]
    second.close()


def test_a_flood_is_folded_into_one_summary_per_destination(conn, receiver):
    clock = WallClock()
    destinations.add(conn, f"http://{receiver.base}/hook", clock(), allow_local=True)
    deliverer = Deliverer(conn, DeliveryRules(max_per_minute=3, allow_local=True), clock)
    queue(conn, [f"m{i}" for i in range(10)], clock)
    while deliverer.pass_once():
        clock.now += 1
    assert delivered_keys(receiver) == ["m0", "m1", "m2"]
    clock.now += 60
    while deliverer.pass_once():
        clock.now += 1
    keys = delivered_keys(receiver)
    assert keys[:3] == ["m0", "m1", "m2"] and keys[3].startswith("summary:") and len(keys) == 4
    summary = receiver.taken()[3].json()
    assert summary["title"] == "mdboost: 7 messages held back (too many in a minute)"
    assert summary["body"].splitlines() == [f"- title m{i}" for i in range(3, 10)]
    queue(conn, ["late"], clock)  # after the summary, in order
    clock.now += 60
    while deliverer.pass_once():
        pass
    assert delivered_keys(receiver)[-1] == "late"


def test_a_removed_destination_gets_nothing_more(conn, receiver):
    clock = WallClock()
    destination = destinations.add(conn, f"http://{receiver.base}/hook", clock(), allow_local=True)
    queue(conn, ["a"], clock)
    assert stored.remove_page_destination(conn, destination, clock())
    assert Deliverer(conn, DeliveryRules(allow_local=True), clock).pass_once() == 0
    assert receiver.taken() == []
    state = conn.execute("SELECT state FROM notify_outbox").fetchone()[0]
    assert state == "cancelled"
