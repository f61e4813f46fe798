"""A run's start and end as events, and the SHR pool that chains reshapes into one expansion
(pure; app/notify/events.py calls these from the tick's detector)."""

from typing import Any

from app.live.job import POOL_CHAIN_S
from app.notify.observation import ArrayFacts, ArrayMemory, Event, EventRules, State, TickFacts

# After an SHR member's reshape ends, wait this long (sampler clock) for the next one to start
# before calling the expansion finished: DSM starts the next array within seconds.
POOL_SETTLE_S = 120.0
# mismatch_cnt on raid1/raid10 counts harmless differences (md.rst: swap, memory-mapped writes).
NOISY_MISMATCH_LEVELS = ("raid1", "raid10")


def run_started(array: ArrayFacts, obs: TickFacts, state: State, events: list[Event]) -> None:
    detail: dict[str, Any] = {"action": array.action, "percent": array.progress}
    if array.action == "reshape" and array.role == "data":
        pool = state["pool"]
        chained = pool is not None and (
            pool["running"]
            or (pool["last_end"] is not None and obs.now - pool["last_end"] <= POOL_CHAIN_S)
        )
        if pool is not None and chained:
            if array.name not in pool["members"]:
                pool["members"].append(array.name)
        else:
            pool = state["pool"] = {"id": array.run_id, "members": [array.name], "last_end": None}
        pool["running"] = True
        queued = [a.name for a in obs.arrays or () if a.queued and a.role == "data"]
        detail |= {"pool_phase": pool["members"].index(array.name) + 1, "pool_queued": queued}
        detail["pool_members"] = list(pool["members"])
    events.append(Event("started", f"run:{array.run_id}:started", array.name, array.run_id, detail))


def run_ended(
    was: ArrayMemory,
    array: ArrayFacts | None,
    obs: TickFacts,
    rules: EventRules,
    state: State,
    events: list[Event],
) -> None:
    run_id = was.run_id
    if run_id is None:
        return
    end = obs.ended.get(run_id)
    name = end.array if end else (array.name if array else "?")
    action = end.action if end else was.action
    outcome = end.outcome if end else "ended"
    detail: dict[str, Any] = {
        "action": action,
        "outcome": outcome,
        "started": end.started if end else None,
        "finished": end.finished if end else obs.now,
    }
    pool = state["pool"]
    if pool is not None and name in pool["members"] and action == "reshape":
        pool["last_end"] = detail["finished"]
        pool["running"] = False
        detail["pool_members"] = list(pool["members"])
    events.append(Event("finished", f"run:{run_id}:finished", name, run_id, detail))
    mismatch = array.mismatch_cnt if array is not None else None
    level = array.level if array is not None else None
    if (
        action == "check"
        and outcome == "completed"
        and mismatch is not None
        and mismatch > rules.mismatch_threshold
        and level not in NOISY_MISMATCH_LEVELS
    ):
        events.append(
            Event(
                "mismatch",
                f"run:{run_id}:mismatch",
                name,
                run_id,
                {"mismatch_cnt": mismatch, "level": level},
            )
        )


def pool_finished(obs: TickFacts, state: State, events: list[Event]) -> None:
    """One message for a whole SHR expansion, once no member reshapes or waits to."""
    pool = state["pool"]
    if pool is None or pool["running"] or pool["last_end"] is None:
        return
    busy = [a for a in obs.arrays or () if a.role == "data" and (a.queued or a.action == "reshape")]
    if busy or obs.now - pool["last_end"] < POOL_SETTLE_S:
        return
    if len(pool["members"]) >= 2:
        events.append(
            Event(
                "pool_finished",
                f"pool:{pool['id']}:finished",
                detail={"members": pool["members"], "finished": pool["last_end"]},
            )
        )
    state["pool"] = None
