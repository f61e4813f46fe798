"""Times in a message name the box's zone: the phone that reads it may sit in another."""

import time
from collections.abc import Iterator

import pytest

from app.notify.messages import zoned_clock

# 2026-01-15 12:00 UTC: winter, so the zones' abbreviations are fixed.
NOON_UTC = 1768478400.0


@pytest.fixture
def box_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("zone", "expected"),
    [("America/Los_Angeles", "Thu 15 Jan 04:00 PST"), ("Europe/Berlin", "Thu 15 Jan 13:00 CET")],
)
def test_a_message_time_carries_the_box_zone(
    monkeypatch: pytest.MonkeyPatch, box_zone: None, zone: str, expected: str
) -> None:
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    assert zoned_clock(NOON_UTC) == expected
