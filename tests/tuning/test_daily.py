"""Daily windows on the wall clock: across midnight and daylight saving time, times of day, zones."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from app.tuning.schedule import daily

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str, zone: ZoneInfo = BERLIN) -> float:
    """Unix seconds of a wall-clock time in `zone`: at('2026-03-29 01:00')."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=zone).timestamp()


@pytest.mark.parametrize(
    ("now", "window"),
    [
        ("2026-06-10 22:59", None),
        ("2026-06-10 23:00", ("2026-06-10 23:00", "2026-06-11 02:00")),
        ("2026-06-11 00:30", ("2026-06-10 23:00", "2026-06-11 02:00")),
        ("2026-06-11 01:59", ("2026-06-10 23:00", "2026-06-11 02:00")),
        ("2026-06-11 02:00", None),
    ],
)
def test_a_window_across_midnight(now, window):
    found = daily.window_at(23 * 60, 2 * 60, at(now), BERLIN)
    assert found == (None if window is None else (at(window[0]), at(window[1])))


def test_a_window_is_an_hour_shorter_the_night_clocks_go_forward_and_longer_when_they_go_back():
    spring = daily.window_at(60, 7 * 60, at("2026-03-29 04:00"), BERLIN)
    autumn = daily.window_at(60, 7 * 60, at("2026-10-25 04:00"), BERLIN)
    usual = daily.window_at(60, 7 * 60, at("2026-06-10 04:00"), BERLIN)
    assert spring is not None and autumn is not None and usual is not None
    assert spring[1] - spring[0] == 5 * 3600
    assert autumn[1] - autumn[0] == 7 * 3600
    assert usual[1] - usual[0] == 6 * 3600
    assert datetime.fromtimestamp(spring[1], BERLIN).strftime("%H:%M %Z") == "07:00 CEST"
    assert datetime.fromtimestamp(autumn[1], BERLIN).strftime("%H:%M %Z") == "07:00 CET"


def test_a_start_the_clock_skips_begins_when_the_clock_jumps_past_it():
    # 02:30 does not exist in Berlin on 2026-03-29: at 02:00 CET the clock jumps to 03:00 CEST.
    found = daily.window_at(150, 6 * 60, at("2026-03-29 03:10"), BERLIN)
    assert found is not None
    assert found[0] == at("2026-03-29 01:00", ZoneInfo("UTC"))
    assert datetime.fromtimestamp(found[0], BERLIN).strftime("%H:%M %Z") == "03:00 CEST"
    assert daily.window_at(150, 6 * 60, found[0] - 1, BERLIN) is None


@pytest.mark.parametrize("text", ["7", "24:00", "12:60", "1:5", "ab:cd", "", "12:00:00"])
def test_a_time_of_day_must_be_one(text):
    with pytest.raises(daily.ScheduleError):
        daily.parse_hhmm(text)


def test_the_zone_comes_from_tz_and_an_unknown_one_falls_back_to_utc():
    assert daily.local_zone("Europe/Berlin")[1] == "Europe/Berlin"
    assert daily.local_zone(":America/New_York")[1] == "America/New_York"
    assert daily.local_zone("Mars/Olympus_Mons") == (ZoneInfo("UTC"), "UTC")
