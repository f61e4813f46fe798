"""The open tuning session as the kernel shows it now: each knob's original, desired and current."""

import sqlite3
from collections.abc import Callable

from app.kernel.host import Host
from app.kernel.knobs import read_knob
from app.live.snapshot import KnobNow
from app.md.knobs import CATALOGUE, Knob
from app.store import journal


def knob_states(host: Host, conn: sqlite3.Connection, session: sqlite3.Row) -> list[KnobNow]:
    """One entry per journaled knob; `drift` when the kernel no longer holds what mdboost set."""

    def read(key: str, knob: Knob | None, target: str | None) -> str | None:
        return read_knob(host, knob, target) if knob else None

    return journaled_knobs(conn, session, read)


def journaled_knobs(
    conn: sqlite3.Connection,
    session: sqlite3.Row,
    current_of: Callable[[str, Knob | None, str | None], str | None],
) -> list[KnobNow]:
    """The session's knobs with what `current_of(key, knob, target)` says the kernel holds."""
    states = []
    for row in journal.session_knobs(conn, session["id"]):
        knob = CATALOGUE.get(row["knob"])  # None: journaled by a version that knew another knob
        current = current_of(row["key"], knob, row["target"])
        states.append(
            KnobNow(
                key=row["key"],
                knob=row["knob"],
                target=row["target"],
                unit=knob.unit if knob else "",
                original=row["original"],
                desired=row["desired"],
                current=current,
                drift=current is not None and current != row["desired"],
            )
        )
    return states
