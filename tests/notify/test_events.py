"""The pure detector: previous state and this tick in, events out, each with its dedup key."""

import json
from dataclasses import replace

from app.notify.events import detect
from app.notify.observation import ArrayFacts, ArrayMemory, Drift, EventRules, RunEnd, TickFacts
from app.notify.run_events import POOL_SETTLE_S

RULES = EventRules(milestone_percent=25, stall_s=600, mismatch_threshold=0, sampler_failures=3)


def array(name="md2", **fields) -> ArrayFacts:
    base = ArrayFacts(
        name=name, state="active", level="raid5", role="data", status="UUUU", degraded=0,
        devices={"sda5": "", "sdb5": "", "sdc5": "", "sdd5": ""}, run_id=None, action=None,
        done_blocks=None, total_blocks=None, percent=None, mismatch_cnt=0, queued=False,
    )  # fmt: skip
    return replace(base, **fields)


def running(name="md2", run_id=1, done=0, total=1000, action="reshape", verdict=None) -> ArrayFacts:
    return array(
        name, run_id=run_id, action=action, done_blocks=done, total_blocks=total, verdict=verdict
    )


def run(ticks, state=None, rules=RULES):
    """Feed observations in order; returns the final state and every event's key."""
    keys = []
    for obs in ticks:
        state, found = detect(state, obs, rules)
        keys += [e.key for e in found]
    return state, keys


def test_start_milestones_and_finish_each_once():
    ticks = [
        TickFacts(0, (array(),)),
        TickFacts(10, (running(done=100),)),
        TickFacts(20, (running(done=260),)),
        TickFacts(30, (running(done=760),)),  # 50 and 75 in one tick
        TickFacts(40, (running(done=990),)),
        TickFacts(50, (array(),), ended={1: RunEnd(1, "md2", "reshape", "completed", 10, 45)}),
        TickFacts(60, (array(),)),
    ]
    _, keys = run(ticks)
    assert keys == [
        "run:1:started",
        "run:1:milestone:25",
        "run:1:milestone:50",
        "run:1:milestone:75",
        "run:1:finished",
    ]


def test_a_restart_with_the_saved_state_repeats_nothing_and_misses_nothing():
    state, keys = run([TickFacts(0, (running(done=100),)), TickFacts(10, (running(done=200),))])
    assert keys == ["run:1:started"]
    saved = json.loads(json.dumps(state))  # what notify_state holds
    _, more = run([TickFacts(20, (running(done=300),))], saved)
    assert more == ["run:1:milestone:25"]


def test_a_memory_saved_before_failed_was_remembered_still_knows_a_broken_array():
    """A memory from before "failed" was saved: mdstat's word "broken" told it, so a broken
    array is not announced again after the upgrade, while a newly broken one is."""
    broken = array(state="broken", degraded=2, failed=True)
    old = {"state": "broken", "degraded": 2, "devices": {}, "run_id": None}
    state, keys = run([TickFacts(50, (broken,))], {"arrays": {"md2": old}})
    assert keys == []
    assert state["arrays"]["md2"]["failed"] is True
    old_active = {"state": "active", "degraded": 2, "devices": {}, "run_id": None}
    _, keys = run([TickFacts(50, (broken,))], {"arrays": {"md2": old_active}})
    assert keys == ["array:md2:broken:50"]


def test_the_saved_memory_reads_back_as_it_was():
    busy = running(done=100, verdict=("busy", 0.0, "Busy"))
    state, _ = run([TickFacts(0, (busy, array("md3")))])
    saved = json.loads(json.dumps(state))
    for memory in saved["arrays"].values():
        assert ArrayMemory.from_saved(memory).saved() == memory
    assert "verdict" in saved["arrays"]["md2"] and "verdict" not in saved["arrays"]["md3"]


def test_a_run_already_under_way_is_announced_without_back_filled_milestones():
    _, keys = run([TickFacts(0, (running(done=600),)), TickFacts(10, (running(done=700),))])
    assert keys == ["run:1:started"]


def test_stalled_then_resumed():
    ticks = [TickFacts(t, (running(done=100),)) for t in (0, 300, 599, 600, 900)]
    ticks.append(TickFacts(1000, (running(done=150),)))
    _, keys = run(ticks)
    assert keys == ["run:1:started", "run:1:stalled:0", "run:1:resumed:0"]
    queued = array("md3", queued=True)
    _, keys = run([TickFacts(0, (queued,)), TickFacts(5000, (queued,))])
    assert keys == []  # waiting its turn (DELAYED) is not a stall


def test_degraded_failed_member_restored_and_broken():
    failed = {"sda5": "", "sdb5": "F", "sdc5": "", "sdd5": ""}
    ticks = [
        TickFacts(0, (array(),)),
        TickFacts(10, (array(degraded=1, status="U_UU", devices=failed),)),
        TickFacts(20, (array(degraded=1, status="U_UU", devices=failed),)),
        TickFacts(30, (array(degraded=0),)),
        TickFacts(40, (array(state="broken", degraded=2),)),
    ]
    _, keys = run(ticks)
    assert keys == [
        "array:md2:failed:sdb5:10",
        "array:md2:degraded:1:10",
        "array:md2:restored:30",
        "array:md2:broken:40",
        "array:md2:degraded:2:40",
    ]


def test_mismatch_after_a_check_but_not_on_raid1():
    for level, expected in (("raid5", ["run:7:mismatch"]), ("raid1", [])):
        ticks = [
            TickFacts(
                0, (array(level=level, run_id=7, action="check", done_blocks=5, total_blocks=10),)
            ),
            TickFacts(
                10,
                (array(level=level, mismatch_cnt=128),),
                ended={7: RunEnd(7, "md2", "check", "completed", 0, 9)},
            ),
        ]
        _, keys = run(ticks)
        assert [k for k in keys if "mismatch" in k] == expected


def test_an_shr_expansion_is_one_job_with_one_finish():
    done = {1: RunEnd(1, "md2", "reshape", "completed", 0, 100)}
    md3_done = {2: RunEnd(2, "md3", "reshape", "completed", 100, 200)}
    ticks = [
        TickFacts(0, (running("md2", 1, 100), array("md3"))),
        TickFacts(100, (array("md2"), running("md3", 2, 10)), ended=done),
        TickFacts(200, (array("md2"), array("md3")), ended=md3_done),
        TickFacts(200 + POOL_SETTLE_S - 1, (array("md2"), array("md3"))),
        TickFacts(200 + POOL_SETTLE_S, (array("md2"), array("md3"))),
        TickFacts(200 + 2 * POOL_SETTLE_S, (array("md2"), array("md3"))),
    ]
    state, found = None, []
    for obs in ticks:
        state, events = detect(state, obs, RULES)
        found += events
    assert [e.key for e in found if e.kind != "milestone"] == [
        "run:1:started",
        "run:1:finished",
        "run:2:started",
        "run:2:finished",
        "pool:1:finished",
    ]
    md3_start = next(e for e in found if e.key == "run:2:started")
    assert md3_start.detail["pool_phase"] == 2 and md3_start.detail["pool_members"] == [
        "md2",
        "md3",
    ]
    finish = found[-1]
    assert finish.detail == {"members": ["md2", "md3"], "finished": 200}


def test_a_single_reshape_is_no_pool():
    ticks = [
        TickFacts(0, (running("md2", 1, 100),)),
        TickFacts(
            100, (array("md2"),), ended={1: RunEnd(1, "md2", "reshape", "completed", 0, 100)}
        ),
        TickFacts(1000, (array("md2"),)),
    ]
    _, keys = run(ticks)
    assert keys == ["run:1:started", "run:1:finished"]


def test_boost_left_on_once_per_session():
    ticks = [
        TickFacts(0, (running(done=1),), boost_session=(4, ("md2",))),
        TickFacts(10, (array(),), boost_session=(4, ("md2",))),
        TickFacts(20, (array(),), boost_session=(4, ("md2",))),
    ]
    _, keys = run(ticks)
    assert [k for k in keys if k.startswith("session")] == ["session:4:left-on"]


def test_drift_events_after_the_first_start_only():
    old = Drift(3, "md2", "stripe_cache_size@md2", "16384", "256")
    state, keys = run([TickFacts(0, (array(),), drift=(old,), last_event_id=3)])
    assert keys == []  # drift from before notifications existed is history
    new = Drift(9, "md2", "stripe_cache_size@md2", "16384", "4096")
    _, keys = run([TickFacts(10, (array(),), drift=(new,), last_event_id=9)], state)
    assert keys == ["drift:9"]


def test_the_sampler_failing_and_recovering():
    fail = [TickFacts(t, None, error="cannot read mdstat: EIO") for t in (10, 20, 30, 40)]
    _, keys = run([TickFacts(0, (array(),)), *fail, TickFacts(50, (array(),))])
    assert keys == ["sampler:10:failing", "sampler:10:recovered"]


def test_a_run_that_began_between_two_ticks_gets_the_milestones_it_passed():
    _, keys = run([TickFacts(0, (array(),)), TickFacts(10, (running(done=600),))])
    assert keys == ["run:1:started", "run:1:milestone:25", "run:1:milestone:50"]


def test_each_reason_for_slowness_is_told_once_per_run_and_its_end_is_no_news():
    """held, yielding, held again: two messages; the reason that came back is no news."""
    held = ("held_by_max", 100.0, "Held by the speed limit: ...")
    other = ("yielding", 400.0, "Held back by other I/O on the disks: ...")
    ticks = [
        TickFacts(0, (running(done=100),)),
        TickFacts(160, (running(done=200, verdict=held),)),
        TickFacts(170, (running(done=210, verdict=held),)),
        TickFacts(300, (running(done=300),)),
        TickFacts(460, (running(done=400, verdict=other),)),
        TickFacts(560, (running(done=500, verdict=("held_by_max", 500.0, "Held by")),)),
    ]
    state, keys = run(ticks, rules=replace(RULES, milestone_percent=100))
    assert keys == ["run:1:started", "run:1:why:held_by_max:100", "run:1:why:yielding:400"]
    saved = json.loads(json.dumps(state))  # a restart neither repeats it nor misses the next
    again = running(done=510, verdict=("held_by_max", 500.0, ""))
    _, more = run([TickFacts(570, (again,))], saved, replace(RULES, milestone_percent=100))
    assert more == []
