"""Notifications through the real server (uvicorn in a subprocess): the account page, kill -9
with messages in the outbox, and a simulated SHR expansion at high speed-up with a stall."""

import re
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.kernel_tree import RESHAPE_TOTAL, KernelTree, mdstat_text, progress, raid1, raid5
from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server, wait_for

PASSWORD = "correct horse battery"


@pytest.fixture
def receiver():
    http = HttpReceiver().start()
    yield http
    http.stop()


def keys_of(receiver: HttpReceiver) -> list[str]:
    return [r.json()["key"] for r in receiver.taken()]


def outbox(db: Path) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM notify_outbox ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


def serve(box: KernelTree, tmp_path: Path, **env: str) -> Server:
    """`mdboost serve` on the test tree, with the admin password (and `env`)."""
    return Server(
        ["serve"],
        env={
            "MDBOOST_PROC_ROOT": str(box.proc),
            "MDBOOST_SYS_ROOT": str(box.sys),
            "MDBOOST_DB": str(tmp_path / "mdboost.db"),
            "MDBOOST_PASSWORD": PASSWORD,
            **ALLOW_LOCAL,
            **env,
        },
        log=tmp_path / "server.log",
    )


def test_the_account_page_adds_lists_masked_tests_and_removes(box, tmp_path, receiver):
    env_url = f"ntfy+http://{receiver.base}/env_topic_k7?token=tk_envsecret"
    server = serve(box, tmp_path, MDBOOST_NOTIFY=env_url)
    secret_url = f"gotify+http://{receiver.base}/GotifyAppToken9"
    with server:
        client = httpx.Client(base_url=server.base)
        anonymous = client.post("/account/notify", data={"url": secret_url})
        assert anonymous.status_code == 401
        client.post("/login", data={"password": PASSWORD})
        page = client.get("/account").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        assert f"ntfy+http://{receiver.base}/…cret" in page and "tk_envsecret" not in page
        assert (
            client.post("/account/notify", data={"url": secret_url}).status_code == 403
        )  # no CSRF
        added = client.post("/account/notify", data={"url": secret_url, "csrf_token": csrf})
        assert added.status_code == 303
        page = client.get("/account").text
        assert f"gotify+http://{receiver.base}/…ken9" in page and "GotifyAppToken9" not in page
        bad = client.post("/account/notify", data={"url": "ftp://x/y", "csrf_token": csrf})
        assert bad.status_code == 400 and "unknown scheme" in bad.text
        ids = re.findall(r'action="/account/notify/(\d+)/test"', page)
        assert len(ids) == 2 and len(re.findall(r"/remove", page)) == 1  # env ones stay
        tested = client.post(f"/account/notify/{ids[1]}/test", data={"csrf_token": csrf})
        assert "Test message sent to gotify+http://" in tested.text
        # Only the gotify destination's requests: on a loaded machine the environment's ntfy
        # destination has had md2's "Reshaping md2" notice by now, from the same receiver.
        (probe,) = [request for request in receiver.taken() if request.path == "/message"]
        assert probe.json()["title"] == "mdboost test message"
        receiver.status = 503
        failed = client.post(f"/account/notify/{ids[0]}/test", data={"csrf_token": csrf})
        assert "not sent: the log says why" in failed.text and "503" not in failed.text
        removed = client.post(f"/account/notify/{ids[1]}/remove", data={"csrf_token": csrf})
        assert removed.status_code == 303
        assert "…ken9" not in client.get("/account").text
    log = (tmp_path / "server.log").read_text()
    for secret in ("tk_envsecret", "env_topic_k7", "GotifyAppToken9"):
        assert secret not in log


def demo(tmp_path: Path, speedup: int, receiver: HttpReceiver, **env: str) -> Server:
    return Server(
        ["demo", "--speedup", str(speedup), "--state-dir", str(tmp_path)],
        env={
            "MDBOOST_NOTIFY": f"http://{receiver.base}/hook",
            "MDBOOST_NOTIFY_RETRY_SECONDS": "0.2",
            "MDBOOST_NOTIFY_RETRY_MAX_SECONDS": "1",
            # The simulator rewrites its tree about once a wall second: at this speed-up that is
            # hours of simulated time, which must not look like a stall.
            "MDBOOST_NOTIFY_STALL_MINUTES": "2000",
            **ALLOW_LOCAL,
            **env,
        },
        log=tmp_path / "server.log",
    )


def test_kill_9_with_messages_in_the_outbox_delivers_them_after_the_restart_none_twice(
    tmp_path, receiver
):
    receiver.status = 503  # the phone's server is down
    db = tmp_path / "mdboost.db"
    first = demo(tmp_path, 20000, receiver).start()
    try:
        queued = wait_for(
            lambda: len(rows := outbox(db)) >= 3 and any(r["attempts"] for r in rows) and rows,
            60,
            "3 queued messages, one tried",
        )
        assert all(row["state"] == "pending" for row in queued)  # 503: none delivered
        assert any(row["attempts"] >= 1 and row["last_error"] for row in queued)
    finally:
        # Closed first, then idle: a request the killed server had in flight must not be
        # answered 200 (and recorded) after the status below changes: that read as a message
        # sent twice (seen once under load).
        receiver.stop()
        first.kill()
    wait_for(receiver.idle, 30, "the receiver's last answer to the killed server")
    before = [row["dedup_key"] for row in outbox(db)]
    assert receiver.taken() == []
    receiver.status = 200
    receiver.start()
    with demo(tmp_path, 20000, receiver) as second:
        wait_for(lambda: set(before) <= set(keys_of(receiver)), 60, "the queued messages")
        wait_for(lambda: all(r["state"] == "delivered" for r in outbox(db)), 30, "an empty outbox")
        assert second.get("/healthz")["status"] == "ok"
    keys = keys_of(receiver)
    assert keys[: len(before)] == before  # in order, and first
    assert len(keys) == len(set(keys))  # none twice
    # The demo goes on at 20000x while the server stops: a message queued in its last moments
    # stays pending for the next start, which is right; every delivered one was taken once.
    assert [r["dedup_key"] for r in outbox(db) if r["state"] == "delivered"] == keys


def test_a_simulated_shr_expansion_at_high_speed_up_with_a_stall(tmp_path, receiver):
    def kinds() -> list[tuple[str | None, str]]:
        return [(m["array"], m["kind"]) for m in (r.json() for r in receiver.taken())]

    # The simulated disks stand still from the start, so the stall comes first however late a
    # loaded machine runs the first tick; at 50000x md3 takes about two wall seconds, too short
    # to stop it on cue.
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "freeze").touch()
    # Days of simulated time pass each second: more than the flood limit of a real minute.
    with demo(tmp_path, 50000, receiver, MDBOOST_NOTIFY_MAX_PER_MINUTE="100"):
        wait_for(lambda: ("md2", "stalled") in kinds(), 60, "md2's stall")
        (tmp_path / "tree" / "freeze").unlink()
        wait_for(lambda: (None, "pool_finished") in kinds(), 60, "the whole expansion")
    messages = [r.json() for r in receiver.taken()]
    summary = [(m["array"], m["kind"]) for m in messages]
    md2 = [kind for array, kind in summary if array == "md2"]
    md3 = [kind for array, kind in summary if array == "md3"]
    assert md2[:3] == ["started", "stalled", "resumed"] and md2[-1] == "finished"
    assert set(md2[3:-1]) == {"milestone"}
    # After the knee a tick covers ~45 % of md3: "finished" may come before a 75 % message.
    assert md3[0] == "started" and "milestone" in md3 and md3[-1] == "finished"
    assert summary.index(("md2", "finished")) < summary.index(("md3", "started"))
    assert summary[-1] == (None, "pool_finished")
    assert len({m["key"] for m in messages}) == len(messages)
    md3_started = messages[summary.index(("md3", "started"))]
    assert md3_started["title"] == "md3: reshape started (SHR expansion, array 2)"


def test_queued_messages_link_to_the_address_the_owner_opened_the_page_at(box, tmp_path, receiver):
    """Without MDBOOST_PUBLIC_URL a message's link is the address the owner used to
    add the destination (here the NAS's LAN address), not http://<hostname>:8080/."""
    server = serve(box, tmp_path)
    lan = "192.168.1.20:5080"
    with server:
        client = httpx.Client(base_url=server.base, headers={"Host": lan})
        client.post("/login", data={"password": PASSWORD})
        page = client.get("/account").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        hook = f"http://{receiver.base}/hook"
        added = client.post("/account/notify", data={"url": hook, "csrf_token": csrf})
        assert added.status_code == 303
        # md2 reaches 30 %: the 25 % milestone is queued after the destination was added.
        total = RESHAPE_TOTAL
        box.mdstat(
            mdstat_text(raid5(progress=progress("reshape", total * 3 // 10, total)), raid1())
        )

        def milestone() -> dict | None:
            found = [r.json() for r in receiver.taken() if r.path == "/hook"]
            return next((m for m in found if ":milestone:" in m["key"]), None)

        message = wait_for(milestone, 30, "the 25 % milestone's message")
    assert message["click"] == f"http://{lan}/#array-md2", message
