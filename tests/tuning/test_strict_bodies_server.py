"""Schedules have a cap, times are ASCII digits, booleans are booleans.
Through the real server on a temporary kernel tree: nothing is stored or written for a refused
body."""

import httpx
import pytest

from tests.server import tree_server

TOKEN = "test-token-for-strict-bodies-0123456789abcdef0123456789"
MAX_SCHEDULES = 48


@pytest.fixture
def server(box, tmp_path):
    with tree_server(box, tmp_path, MDBOOST_API_TOKEN=TOKEN, MDBOOST_MAX_CACHE_MB="1024") as up:
        yield up


def schedules(server) -> list[dict]:
    return server.get("/api/schedules")["schedules"]


def window(n: int) -> dict[str, str]:
    """The n-th one-minute window: 00:00-00:01, 00:02-00:03, ..."""
    return {"preset": "boost", "start": f"{n * 2 // 60:02d}:{n * 2 % 60:02d}",
            "end": f"{(n * 2 + 1) // 60:02d}:{(n * 2 + 1) % 60:02d}"}  # fmt: skip


def test_at_most_48_schedule_windows(server):
    for n in range(MAX_SCHEDULES):
        status, answer = server.request("POST", "/api/schedules", window(n))
        assert status == 201, (n, answer)
    status, answer = server.request("POST", "/api/schedules", window(MAX_SCHEDULES))
    assert status == 409 and "at most 48" in answer["detail"]["message"], answer
    assert len(schedules(server)) == MAX_SCHEDULES
    # Removing one makes room again.
    first = schedules(server)[0]["id"]
    assert server.request("DELETE", f"/api/schedules/{first}")[0] == 200
    assert server.request("POST", "/api/schedules", window(MAX_SCHEDULES))[0] == 201


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("\u0660\u0667:\u0660\u0660", "08:00"),  # Arabic-Indic 07:00
        ("07:00", "\uff10\uff18:\uff10\uff10"),  # full-width 08:00
        ("\u0967:00", "08:00"),  # Devanagari 1
        ("7:0", "08:00"),
        ("24:00", "08:00"),
    ],
    ids=["arabic-indic", "full-width", "devanagari", "one-digit-minutes", "hour-24"],
)
def test_a_time_is_ascii_digits_only(server, start, end):
    status, answer = server.request(
        "POST", "/api/schedules", {"preset": "boost", "start": start, "end": end}
    )
    assert status == 422, answer
    assert schedules(server) == []


def test_an_added_window_is_echoed_as_stored(server):
    status, answer = server.request(
        "POST", "/api/schedules", {"preset": "boost", "start": "7:05", "end": "08:00"}
    )
    assert status == 201 and (answer["start"], answer["end"]) == ("07:05", "08:00")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/boost", {"on": "yes"}),
        ("/api/boost", {"on": "true"}),
        ("/api/boost", {"on": 1}),
        ("/api/boost", {"on": 0}),
        ("/api/boost", {"on": None}),
        ("/api/presets/boost/apply", {"arrays": ["md2"], "extra": True}),
        ("/api/autotune", {"array": 2}),
        ("/api/schedules", {"preset": "boost", "start": 700, "end": "08:00"}),
        ("/api/tokens", {"name": 12}),
    ],
)
def test_a_body_of_the_wrong_type_is_refused_and_nothing_changes(server, box, path, body):
    before = box.snapshot()
    status, answer = server.request("POST", path, body)
    assert status == 422, answer
    assert box.snapshot() == before
    assert server.get("/api/tuning")["active"] is False
    assert schedules(server) == []


@pytest.mark.parametrize("value", ["yes", "1", "on", "0", ""])
def test_the_page_switch_takes_only_true_or_false(server, box, value):
    before = box.snapshot()
    answer = httpx.post(
        server.base + "/ui/boost",
        data={"on": value},
        headers={"authorization": f"Bearer {TOKEN}", "hx-request": "true"},
    )
    assert answer.status_code == 422, answer.text
    assert box.snapshot() == before
    assert server.get("/api/tuning")["active"] is False
