"""The measured effect of a preset: the run's speed before and after, as people read it."""

import sqlite3
from dataclasses import dataclass

import pytest

from app.store import effects, journal


def samples(conn: sqlite3.Connection, points: list[tuple[float, int]]) -> None:
    conn.execute(
        "INSERT INTO runs (id, array, action, started, total_blocks) "
        "VALUES (1, 'md2', 'reshape', 0, 1000000)"
    )
    conn.executemany(
        "INSERT INTO samples (ts, array, run_id, state, done_blocks, total_blocks) "
        "VALUES (?, 'md2', 1, 'active', ?, 1000000)",
        points,
    )


def test_the_mean_speed_is_progress_over_time(conn: sqlite3.Connection) -> None:
    samples(conn, [(0.0, 0), (10.0, 1000), (20.0, 6000)])
    assert effects.mean_speed_kb_s(conn, 1, 0.0, 10.0) == 100.0
    assert effects.mean_speed_kb_s(conn, 1, 10.0, 20.0) == 500.0


def test_a_window_with_too_few_samples_measures_nothing(conn: sqlite3.Connection) -> None:
    samples(conn, [(0.0, 0), (2.0, 1000)])
    assert effects.mean_speed_kb_s(conn, 1, 0.0, 10.0) is None  # covers 2 s of 10
    assert effects.mean_speed_kb_s(conn, 1, 5.0, 10.0) is None  # no sample at all


@pytest.mark.parametrize(
    ("before", "after", "ratio", "complete", "text"),
    [
        (6000.0, 27000.0, 4.5, True, "boost: 6.1 → 27.6 MB/s, ×4.5"),
        (6000.0, 27000.0, 4.5, False, "boost: 6.1 → 27.6 MB/s, ×4.5 (measuring)"),
        (6000.0, None, None, False, "boost: measuring…"),
        (None, None, None, True, "boost: not enough samples to measure"),
    ],
)
def test_the_summary_people_read(
    before: float | None, after: float | None, ratio: float | None, complete: bool, text: str
) -> None:
    assert effects.summary("boost", before, after, ratio, complete) == text


@dataclass(frozen=True)
class Change:
    key: str
    knob: str
    target: str | None
    from_value: str
    to_value: str


def test_an_effect_names_the_preset_it_was_applied_over(conn: sqlite3.Connection) -> None:
    """Boost applied over auto-tune is read as that; an apply that opened its session over
    nothing, and every effect the page lists, with the preset read in the effects' own query."""
    samples(conn, [(0.0, 0)])
    cache = Change("stripe_cache_size@md2", "stripe_cache_size", "md2", "256", "4096")
    for preset, at in (("auto-tune", 10.0), ("boost", 20.0)):
        session_id, op_id = journal.begin_apply(conn, preset, ["md2"], [cache], at)
        journal.finish_apply(conn, session_id, op_id, preset, ["md2"], [cache], at)
    asked: list[str] = []
    conn.set_trace_callback(asked.append)
    found = effects.recent(conn, 300.0, 25.0)
    conn.set_trace_callback(None)
    assert [(e.preset, e.over) for e in found] == [("boost", "auto-tune"), ("auto-tune", None)]
    assert found[0].summary == "boost over auto-tune: measuring…"
    assert not any("earlier.preset" in s for s in asked[1:])  # not asked again per effect
