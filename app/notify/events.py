"""Pure event detector: what the arrays looked like last time and now in, events out.

The state it returns is saved with the outbox rows of its events (notifier.py), so after a
restart an event is neither repeated nor missed. Every event has a dedup key naming the one thing
it reports ("run:12:milestone:50"), so even a replayed tick cannot queue it twice.
Events follow mdadm's monitor (RebuildStarted, RebuildNN, RebuildFinished, Fail, DegradedArray,
SpareActive) plus what mdadm cannot know: reshapes across an SHR pool, stalls, a boost left on.
"""

import copy
import math
from dataclasses import replace
from typing import Any

from app.notify.observation import ArrayFacts, ArrayMemory, Event, EventRules, State, TickFacts
from app.notify.run_events import pool_finished, run_ended, run_started


def shifted(state: State, delta: float) -> State:
    """The state on a wall clock that stepped by `delta` s: the stall timer, the
    sampler's failing streak and the pool's last end keep their monotonic distance to now."""

    def moved(holder: dict[str, Any] | None, key: str) -> None:
        if holder is not None and holder.get(key) is not None:
            holder[key] += delta

    state = copy.deepcopy(state)
    moved(state, "failing_since")
    moved(state.get("pool"), "last_end")
    for memory in state.get("arrays", {}).values():
        moved(memory, "progress_ts")
        moved(memory, "stalled_since")
    return state


def detect(prev: State | None, obs: TickFacts, rules: EventRules) -> tuple[State, list[Event]]:
    """The events between `prev` and `obs`, and the state to compare the next tick with."""
    first = prev is None
    state: State = {
        "arrays": {},
        "failures": 0,
        "failing_since": None,
        "failing_sent": False,
        "drift_seen": obs.last_event_id,
        "pool": None,
        "boost_left_on": None,
    }
    if prev is not None:
        # A copy: when the caller cannot save the new state, `prev` must stay as it was.
        state |= {k: v for k, v in copy.deepcopy(prev).items() if k in state}
    events: list[Event] = []
    if obs.arrays is None or obs.error is not None:
        _sampler_failed(state, obs, rules, events)
        return state, events
    if state["failing_sent"]:
        since = state["failing_since"]
        events.append(Event("sampler_recovered", f"sampler:{since:.0f}:recovered", detail={}))
    state |= {"failures": 0, "failing_since": None, "failing_sent": False}
    old_arrays = {name: ArrayMemory.from_saved(saved) for name, saved in state["arrays"].items()}
    new_arrays: dict[str, ArrayMemory] = {}
    for array in sorted(obs.arrays, key=lambda a: a.name):
        before = old_arrays.get(array.name)
        new_arrays[array.name] = _array(array, before, obs, rules, state, events)
    for name in sorted(set(old_arrays) - set(new_arrays)):
        run_ended(old_arrays[name], None, obs, rules, state, events)
    state["arrays"] = {name: memory.saved() for name, memory in new_arrays.items()}
    pool_finished(obs, state, events)
    _boost_left_on(obs, state, events)
    if not first:
        for drift in obs.drift:
            if drift.event_id > state["drift_seen"]:
                events.append(
                    Event(
                        "drift",
                        f"drift:{drift.event_id}",
                        drift.array,
                        detail={
                            "key": drift.key,
                            "desired": drift.desired,
                            "current": drift.current,
                        },
                    )
                )
        for found in obs.slower:
            if found.event_id > state["drift_seen"]:
                events.append(
                    Event(
                        "slower",
                        f"slower:{found.event_id}",
                        found.array,
                        detail={"preset": found.preset, "sentence": found.sentence},
                    )
                )
    state["drift_seen"] = max([state["drift_seen"], obs.last_event_id])
    return state, events


def _sampler_failed(state: State, obs: TickFacts, rules: EventRules, events: list[Event]) -> None:
    state["failures"] += 1
    state["failing_since"] = state["failing_since"] or obs.now
    if state["failures"] >= rules.sampler_failures and not state["failing_sent"]:
        state["failing_sent"] = True
        since = state["failing_since"]
        detail = {"error": obs.error, "failures": state["failures"], "since": since}
        events.append(Event("sampler_failing", f"sampler:{since:.0f}:failing", detail=detail))


def _array(
    array: ArrayFacts,
    before: ArrayMemory | None,
    obs: TickFacts,
    rules: EventRules,
    state: State,
    events: list[Event],
) -> ArrayMemory:
    """Events of one array; returns what to remember of it."""
    was = before if before is not None else ArrayMemory()
    _health(array, was, before is not None, obs.now, events)
    if was.run_id is not None and was.run_id != array.run_id:
        run_ended(was, array, obs, rules, state, events)
    memory = ArrayMemory(
        state=array.state,
        failed=array.failed or array.state == "broken",
        degraded=array.degraded,
        devices=array.devices,
        run_id=array.run_id,
        action=array.action,
        role=array.role,
        done=array.done_blocks,
    )
    if array.run_id is None:
        # No run, no stall clock: a timestamp here would change every tick and make an idle
        # tick's state differ, so the notifier would rewrite it each tick for nothing.
        return memory
    memory.verdict, memory.told_verdicts = _slow_reason(array, was, events)
    step = rules.milestone_percent
    progress = array.progress
    reached = math.floor(progress / step) if progress is not None and step > 0 else None
    if was.run_id != array.run_id:
        run_started(array, obs, state, events)
        # First seen already running: the milestones before now are history. Watched while
        # idle last tick: the run began since, so every milestone it passed is new.
        if before is None or reached is None:
            memory.milestone, memory.progress_ts = reached, obs.now
            return memory
        was = replace(was, milestone=0, done=array.done_blocks)
        memory.milestone, memory.progress_ts = 0, obs.now
    else:
        memory.milestone = was.milestone
        memory.progress_ts, memory.stalled_since = was.progress_ts, was.stalled_since
    _stall_clock(array, was, memory, obs.now, rules, events)
    if reached is not None:
        _milestones(array, was.milestone, reached, step, events)
        memory.milestone = reached
    return memory


def _health(
    array: ArrayFacts, was: ArrayMemory, seen_before: bool, now: float, events: list[Event]
) -> None:
    """md gave up on the array, a member failed, members went missing or all came back."""
    name, at = array.name, f"{now:.0f}"
    if (array.failed or array.state == "broken") and not was.failed:
        events.append(Event("broken", f"array:{name}:broken:{at}", name))
    for device, flags in sorted(array.devices.items()):
        if "F" in flags and "F" not in was.devices.get(device, ""):
            key = f"array:{name}:failed:{device}:{at}"
            events.append(Event("member_failed", key, name, detail={"device": device}))
    if array.degraded > was.degraded:
        detail = {"missing": array.degraded, "status": array.status}
        key = f"array:{name}:degraded:{array.degraded}:{at}"
        events.append(Event("degraded", key, name, detail=detail))
    elif seen_before and array.degraded == 0 and was.degraded > 0:
        key = f"array:{name}:restored:{at}"
        events.append(Event("restored", key, name, detail={"status": array.status}))


def _stall_clock(
    array: ArrayFacts,
    was: ArrayMemory,
    memory: ArrayMemory,
    now: float,
    rules: EventRules,
    events: list[Event],
) -> None:
    """A run that moved since the last tick resumes (told if it was stalled); one that has not
    moved for rules.stall_s is stalled, told once from when it last moved."""
    moved = array.done_blocks is not None and was.done is not None and array.done_blocks != was.done
    if moved:
        if memory.stalled_since is not None:
            since = memory.stalled_since
            detail = {"action": array.action, "stalled_s": now - since}
            key = f"run:{array.run_id}:resumed:{since:.0f}"
            events.append(Event("resumed", key, array.name, array.run_id, detail))
        memory.progress_ts, memory.stalled_since = now, None
        return
    since = memory.progress_ts if memory.progress_ts is not None else now
    if memory.stalled_since is None and now - since >= rules.stall_s:
        memory.stalled_since = since
        detail = {"action": array.action, "since": since, "percent": array.progress}
        key = f"run:{array.run_id}:stalled:{since:.0f}"
        events.append(Event("stalled", key, array.name, array.run_id, detail))


def _milestones(
    array: ArrayFacts, told: int | None, reached: int, step: float, events: list[Event]
) -> None:
    """Every milestone (of `step` percent) past the last one told, up to `reached`; 100 % is the
    run's finish, told as such."""
    for m in range((told if told is not None else reached) + 1, reached + 1):
        if m * step < 100:
            detail = {"action": array.action, "percent": m * step}
            key = f"run:{array.run_id}:milestone:{m * step:g}"
            events.append(Event("milestone", key, array.name, array.run_id, detail))


def _slow_reason(
    array: ArrayFacts, was: ArrayMemory, events: list[Event]
) -> tuple[str | None, list[str]]:
    """A new reason holds the run back (it held a minute, app/diagnosis/hysteresis.py): tell
    each reason once per run, so a reason that comes and goes is one message, not one per
    return; a reason that merely ends is no news. Returns the verdict and the reasons told."""
    verdict, since, sentence = array.verdict or (None, None, None)
    told = list(was.told_verdicts) if was.run_id == array.run_id else []
    if verdict is None or verdict in told:
        return verdict, told
    events.append(
        Event(
            "slow_reason",
            f"run:{array.run_id}:why:{verdict}:{since:.0f}",
            array.name,
            array.run_id,
            {"action": array.action, "verdict": verdict, "since": since, "sentence": sentence},
        )
    )
    return verdict, [*told, verdict]


def _boost_left_on(obs: TickFacts, state: State, events: list[Event]) -> None:
    """The tuning session is still open while none of the arrays it tuned runs anything and
    its job has no phase running or to come."""
    session = obs.boost_session
    if session is None:
        state["boost_left_on"] = None
        return
    session_id, tuned = session
    running = {a.name for a in obs.arrays or () if a.action is not None}
    left_on = tuned and not running & set(tuned) and not obs.session_needed
    if left_on and state["boost_left_on"] != session_id:
        state["boost_left_on"] = session_id
        events.append(
            Event("boost_left_on", f"session:{session_id}:left-on", detail={"arrays": list(tuned)})
        )
