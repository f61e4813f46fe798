"""The read side of tuning (GET /api/tuning, the boost panel): session, knobs, effects, RAM."""

import json
import sqlite3
from typing import Any

from app.kernel.knobs import budget_from_available, stripe_cache_mib
from app.live.knobs import journaled_knobs
from app.live.snapshot import BoxNow
from app.store import effects, journal
from app.tuning.plan import member_disks
from app.tuning.tuner import Tuner


def status(tuner: Tuner, conn: sqlite3.Connection, box: BoxNow) -> dict[str, Any]:
    """Whether a preset is on comes from the journal's open session (its one source); what the
    kernel holds, the RAM and the capabilities from the sampler's last tick (`box`)."""
    session = journal.open_session(conn)
    unrecorded = session is not None and tuner.applier.awaiting_record(session["id"])
    if unrecorded:
        session = None  # the kernel has the originals; only the journal's record waits
    max_cache_mb = tuner.settings.max_cache_mb
    budget = (
        max_cache_mb
        if max_cache_mb is not None
        else budget_from_available((box.available_kib or 0) / 1024)
    )
    cost = sum(
        stripe_cache_mib(state.sysfs.stripe_cache_size, member_disks(state.array))
        for state in box.arrays
        if state.sysfs is not None and state.sysfs.stripe_cache_size is not None
    )
    return {
        "active": session is not None,
        "preset": session["preset"] if session else None,
        "session": dict(session) | {"arrays": json.loads(session["arrays"])} if session else None,
        "busy": tuner.operation.locked(),
        # A revert done in the kernel that the journal could not record yet (disk full).
        "unrecorded_revert": unrecorded,
        "knobs": _knobs(conn, session, box) if session else [],
        "effects": effects.recent(conn, tuner.settings.effect_minutes * 60, tuner.clock()),
        "ram": {"budget_mib": round(budget, 1), "cost_mib": round(cost, 1)},
        "capabilities": [c.__dict__ for c in box.capabilities],
        "preset_errors": [e.__dict__ for e in tuner.preset_errors],
        "autotune": tuner.autotuner.view(conn),
    }


def _knobs(conn: sqlite3.Connection, session: sqlite3.Row, box: BoxNow) -> list[dict[str, Any]]:
    """The journaled knobs; what the kernel holds as the last tick read it (None for a session
    newer than that tick)."""
    seen = {k.key: k.current for k in box.knobs} if box.session_id == session["id"] else {}
    return journaled_knobs(conn, session, lambda key, knob, target: seen.get(key))
