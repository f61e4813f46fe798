"""Auto-tune's kernel writes, each an ordinary journaled apply (preset "auto-tune"), and the two
ways back: put back the values a sweep found, or revert the session it opened."""

import logging

from app.kernel.knobs import read_knob
from app.md.knobs import CATALOGUE
from app.store import autotune as stored
from app.store import journal
from app.tuning.planning.knob_plan import KnobChange, KnobPlan
from app.tuning.session.apply import Applier, JournalUnavailable, TuningFailed

log = logging.getLogger(__name__)

PRESET = "auto-tune"


def write(applier: Applier, array: str, wanted: dict[str, int], label: str) -> int | None:
    """One journaled apply of the knobs that differ from `wanted`: its op id, or None when every
    knob already holds its value."""
    changes = []
    for name, value in wanted.items():
        knob = CATALOGUE[name]
        current = read_knob(applier.host, knob, array)
        if current is None or current == str(value):
            continue
        key, reason = f"{name}@{array}", "a step of auto-tune's sweep"
        changes.append(KnobChange(key, name, array, knob.unit, current, str(value), reason))
    if not changes:
        return None
    plan = KnobPlan(PRESET, (array,), tuple(changes), (), (), 0.0, 0.0, ())
    op_id = applier.apply(PRESET, plan, step=label).op_id
    assert op_id is not None  # a step always changes a knob
    return op_id


def restore(
    applier: Applier, sweep_id: int, start_values: dict[str, int], array: str, why: str
) -> str | None:
    """Put the sweep's knobs back as they were when it began; a problem in words, or None. A
    session the sweep opened is reverted; in one it joined (boost was on), only its knobs go
    back to the values found."""
    conn = applier.conn
    found = stored.sweep(conn, sweep_id)
    session = journal.open_session(conn)
    if session is None:
        return None
    opened = found.opened_session or (found.session_id is None and session.started >= found.started)
    try:
        if opened:
            applier.revert_locked(f"auto-tune stopped: {why}")
        else:
            write(applier, array, start_values, "auto-tune put back the values it found")
    except TuningFailed as failure:
        return f"putting the values back failed: {failure.message}"
    except JournalUnavailable as error:
        return str(error)
    return None


def recover(applier: Applier) -> None:
    """At start-up: a sweep a crash cut short puts back the values it found."""
    conn = applier.conn
    cut_short = stored.interrupted(conn)
    if cut_short is None:
        return
    why = "mdboost stopped during the sweep"
    problem = restore(applier, cut_short.id, cut_short.start_values, cut_short.array, why)
    reason = why if problem is None else f"{why}; {problem}"
    stored.finish_sweep(conn, cut_short.id, "interrupted", reason, applier.clock(), None)
    log.warning(
        "auto-tune sweep %d on %s: %s; its values are back", cut_short.id, cut_short.array, why
    )
