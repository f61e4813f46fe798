"""The read side of tuning (GET /api/tuning, the boost panel): session, knobs, effects, RAM."""

import json
import os
import sqlite3
from typing import Any

from app.kernel import mdstat
from app.kernel.host import ARRAY_NAME, Host
from app.live import arrays
from app.tuning import effects, journal
from app.tuning.catalogue import CATALOGUE
from app.tuning.plan import budget_mib, stripe_cache_total_mib
from app.tuning.session import knob_states
from app.tuning.tuner import Tuner


def status(tuner: Tuner, conn: sqlite3.Connection) -> dict[str, Any]:
    session = journal.open_session(conn)
    unrecorded = session is not None and tuner.applier.awaiting_record(session["id"])
    if unrecorded:
        session = None  # the kernel has the originals; only the journal's record waits
    md = arrays.current(tuner.host)
    budget = budget_mib(tuner.host, tuner.settings.max_cache_mb)
    return {
        "active": session is not None,
        "preset": session["preset"] if session else None,
        "session": dict(session) | {"arrays": json.loads(session["arrays"])} if session else None,
        "busy": tuner.operation.locked(),
        # A revert done in the kernel that the journal could not record yet (disk full).
        "unrecorded_revert": unrecorded,
        "knobs": knob_states(tuner.host, conn, session) if session else [],
        "effects": effects.recent(conn, tuner.settings.effect_minutes * 60, tuner.clock()),
        "ram": {
            "budget_mib": round(budget, 1),
            "cost_mib": round(stripe_cache_total_mib(md, tuner.host), 1),
        },
        "capabilities": capabilities(tuner.host, md),
        "preset_errors": [e.__dict__ for e in tuner.preset_errors],
        "autotune": tuner.autotuner.view(conn),
    }


def capabilities(host: Host, md: mdstat.MdStat) -> list[dict[str, Any]]:
    """Each global and per-array knob: does this kernel have it, and may this process write it."""
    out = []
    for knob in CATALOGUE.values():
        if knob.scope == "member":
            continue
        targets: list[str | None] = [None]
        if knob.scope == "array":
            targets = [
                a.name
                for a in md.arrays
                if ARRAY_NAME.fullmatch(a.name) and knob.applies_to(a.level)
            ]
        for target in targets:
            path = host.knob_path(knob.path, target)
            out.append(
                {
                    "knob": knob.name,
                    "target": target,
                    "supported": path.exists(),
                    "writable": path.exists() and os.access(path, os.W_OK),
                }
            )
    return out
