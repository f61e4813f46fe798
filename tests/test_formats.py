"""Times, names and sizes in the owner's words."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from app.formats import about, array_title, between, drive_name, when

BERLIN = ZoneInfo("Europe/Berlin")
# Thursday 26 Nov 2026, 09:22 in Berlin
NOW = datetime(2026, 11, 26, 9, 22, tzinfo=BERLIN).timestamp()
HOUR = 3600.0


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (30, "about a minute"),
        (600, "about 10 minutes"),
        (4000, "about an hour"),
        (30_000, "about 8 hours"),
        (100_000, "about 28 hours"),
        (1.6 * 86400, "about 1.5 days"),
        (2.0 * 86400, "about 2 days"),
        (3.9 * 86400, "about 4 days"),
        (10.2 * 86400, "about 10 days"),
    ],
)
def test_how_long_as_people_say_it(seconds: float, said: str) -> None:
    assert about(seconds) == said


@pytest.mark.parametrize(
    ("hours", "said"),
    [
        (1, "this morning"),
        (5, "this afternoon"),
        (10, "tonight"),
        (20, "early tomorrow"),  # 05:22
        (30, "tomorrow afternoon"),
        (39, "early Sat"),
        (58, "Sat evening"),
        (170, "Thu 03 Dec"),  # a week out: the date, not an ambiguous weekday
    ],
)
def test_when_in_the_page_s_zone(hours: float, said: str) -> None:
    assert when(NOW + hours * HOUR, NOW, BERLIN) == said


def test_a_range_in_words() -> None:
    assert between(NOW + 58 * HOUR, NOW + 120 * HOUR, NOW, BERLIN) == (
        "between Sat evening and Tue morning"
    )
    assert between(NOW + 58 * HOUR, NOW + 59 * HOUR, NOW, BERLIN) == "around Sat evening"
    # The zone decides the day: 23:30 UTC on Friday is Saturday night in Tokyo.
    friday = datetime(2026, 11, 27, 23, 30, tzinfo=ZoneInfo("UTC")).timestamp()
    assert when(friday, NOW, ZoneInfo("UTC")) == "tomorrow evening"
    assert when(friday, NOW, ZoneInfo("Asia/Tokyo")) == "Sat morning"


def test_arrays_and_disks_as_dsm_names_them() -> None:
    assert array_title("md2", "data", synology=True) == "Storage pool (md2)"
    assert array_title("md0", "system", synology=True) == "DSM system (md0)"
    assert array_title("md1", "swap", synology=True) == "DSM swap (md1)"
    assert array_title("md127", "data", synology=False) == "md127"
    assert drive_name("sata3") == "Drive 3"
    assert drive_name("sda") is None and drive_name("sata") is None


def test_sizes_and_plans_in_plain_words():
    from app.formats import a_or_an, knob_amount, plan_outcome

    assert [f"{a_or_an(s)} {s}" for s in ("8.0 TB", "4.0 TB", "18.0 TB", "11.0 TB", "1.0 TB")] == [
        "an 8.0 TB",
        "a 4.0 TB",
        "an 18.0 TB",
        "an 11.0 TB",
        "a 1.0 TB",
    ]
    assert plan_outcome(3600, 3600 * 2.6) == "it took 2.6x as long as planned"
    assert plan_outcome(3600, 1800) == "it took 50 % of the planned time"
    assert plan_outcome(3600, 3700) == "it took about as long as planned"
    assert knob_amount("2000000", "KiB/s") == "2048.0 MB/s"
    assert knob_amount(32768, "KiB") == "32 MiB"
    assert knob_amount("256", "entries") == "256 entries"
    assert knob_amount("1000 (system)", "KiB/s") == "1000 (system) KiB/s"
    assert knob_amount(None, "KiB") == "–"
