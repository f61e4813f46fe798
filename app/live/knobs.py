"""The open tuning session as the kernel shows it now: each knob's original, desired and current."""

from collections.abc import Callable, Iterable

from app.kernel.host import Host
from app.kernel.knobs import read_knob
from app.live.snapshot import KnobNow
from app.md.knobs import CATALOGUE, Knob
from app.records import JournaledKnob
from app.shapes.tuning import Session
from app.store import db, journal


def knob_states(host: Host, conn: db.Connection, session: Session) -> list[KnobNow]:
    """One entry per journaled knob; `drift` when the kernel no longer holds what mdboost set."""

    def read(key: str, knob: Knob | None, target: str | None) -> str | None:
        return read_knob(host, knob, target) if knob else None

    return journaled_knobs(conn, session, read)


def journaled_knobs(
    conn: db.Connection,
    session: Session,
    current_of: Callable[[str, Knob | None, str | None], str | None],
) -> list[KnobNow]:
    """The session's knobs with what `current_of(key, knob, target)` says the kernel holds."""
    return knobs_now(journal.session_knobs(conn, session.id), current_of)


def knobs_now(
    journal_holds: Iterable[JournaledKnob],
    current_of: Callable[[str, Knob | None, str | None], str | None],
) -> list[KnobNow]:
    """Journaled knobs, as the caller has them already, with what `current_of` says the kernel
    holds."""
    states = []
    for journaled in journal_holds:
        knob = CATALOGUE.get(journaled.knob)  # None: journaled by a version that knew another knob
        current = current_of(journaled.key, knob, journaled.target)
        states.append(
            KnobNow(
                key=journaled.key,
                knob=journaled.knob,
                target=journaled.target,
                unit=knob.unit if knob else "",
                original=journaled.original,
                desired=journaled.desired,
                current=current,
                drift=current is not None and current != journaled.desired,
            )
        )
    return states
