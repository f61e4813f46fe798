"""The open tuning session as the kernel shows it now: each knob's original, desired and current."""

import sqlite3
from typing import Any

from app.kernel.host import Host
from app.tuning import journal
from app.tuning.catalogue import CATALOGUE, read_knob


def knob_states(host: Host, conn: sqlite3.Connection, session: sqlite3.Row) -> list[dict[str, Any]]:
    """One entry per journaled knob; `drift` when the kernel no longer holds what mdboost set."""
    states = []
    for row in journal.session_knobs(conn, session["id"]):
        knob = CATALOGUE.get(row["knob"])  # None: journaled by a version that knew another knob
        current = read_knob(host, knob, row["target"]) if knob else None
        states.append(
            {
                "key": row["key"],
                "knob": row["knob"],
                "target": row["target"],
                "unit": knob.unit if knob else "",
                "original": row["original"],
                "desired": row["desired"],
                "current": current,
                "drift": current is not None and current != row["desired"],
            }
        )
    return states
