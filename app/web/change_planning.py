"""The change planner's join: the pools from the sampler's present, the paces and
boost's effect from history, the pure plan (app/planner), shaped for the API and the page."""

from dataclasses import dataclass, replace
from typing import Literal

from app.forecast import boost as boost_model
from app.forecast.physics import AT_MAX, grow_knee, kernel_generation, knee_speedup
from app.formats import a_or_an
from app.live import job as jobs
from app.live.snapshot import Snapshot
from app.planner import layout, paces, timing
from app.planner.capacity import Capacity
from app.planner.change import BadChange, Change, ChangePlan, member_disk, plan_change, tb
from app.records import PlannerRun
from app.shapes.change_plan import PlanBody, PlanCapacity, PlanDuration, PlanStep
from app.store import db, plan_history

KIB = 1024


@dataclass(frozen=True)
class ChangeRequest:
    change: Literal["add", "replace"]
    disk_bytes: int
    member: str | None = None  # a disk ("sdb") or a member partition ("sdb5")


@dataclass(frozen=True)
class PlanSection:
    """The page's "Plan a change": the form's choices, and the plan when one was asked for."""

    change: Literal["add", "replace"]
    disk_tb: float | None  # the new disk's size as asked
    member: str | None  # the member to replace
    disks: list[str]  # the pool's disks, for the form
    pool: str | None  # the pool's name; None when the box has no data array
    plan: PlanBody | None = None
    error: str | None = None  # why the change cannot be planned as asked


def pools(snapshot: Snapshot) -> list[layout.Pool]:
    """The box's data pools as the last tick read them, largest first; while a job runs, as
    that job will leave them (a plan made during an expansion starts from its end)."""
    if snapshot.job.pools_after:
        return list(snapshot.job.pools_after)
    sysfs = {state.name: state.sysfs for state in snapshot.arrays if state.sysfs is not None}
    return jobs.pools(snapshot.mdstat, sysfs)


def plan_requested_change(
    snapshot: Snapshot, conn: db.Connection, request: ChangeRequest, now: float
) -> ChangePlan:
    """Plan the change on the pool it concerns; BadChange when it cannot be planned as asked."""
    found = pools(snapshot)
    if not found:
        raise BadChange("this box has no data array to change")
    member = member_disk(request.member) if request.member else None
    if request.change == "replace" and member is None:
        raise BadChange('a replace names the member to replace, e.g. "member": "sdb"')
    if request.change == "add" and member is not None:
        raise BadChange("an add names no member: the new disk joins the pool")
    pool = next((p for p in found if member in p.disks), found[0])
    wanted = Change(request.change, request.disk_bytes // KIB, member)
    plan = plan_change(
        pool, wanted, pool_history(snapshot, conn, pool, now), now, snapshot.disk_kib
    )
    job = snapshot.job.forecast
    if not snapshot.job.pools_after or job is None:
        return plan
    phases = ", ".join(job.members)
    ends = f", about {span(job.eta - now)} from now" if job.eta is not None else ""
    note = (
        f"planned from the pool as the job running now ({phases}) leaves it; it starts once "
        f"that job ends{ends}"
    )
    return replace(plan, notes=(note, *plan.notes))


def pool_history(
    snapshot: Snapshot,
    conn: db.Connection,
    pool: layout.Pool,
    now: float,
    before: float = plan_history.ALWAYS,
    limit: float | None = None,
) -> paces.History:
    """What the plan rests on: the pool's last sync, its last grow around the knee, boost's
    measured effect (else the forecast's model of it), and md's max limit (now, unless given);
    only what was known `before` a moment when given."""
    arrays = [t.array for t in pool.tiers]
    grow_before, grow_after = _grow(snapshot, conn, pool, now, before)
    boost_sync, boost_grow = _boosts(conn, arrays, before, snapshot.kernel_release)
    knee, knee_range = knee_speedup(snapshot.kernel_release)
    state = snapshot.array(arrays[0])
    if limit is None and state is not None and state.speed_max:
        limit = state.speed_max.kb_s
    return paces.History(
        sync=_sync(conn, arrays, before),
        grow_before=grow_before,
        grow_after=grow_after,
        boost_sync=boost_sync,
        boost_grow=boost_grow,
        knee_speedup=(knee, *knee_range),
        rotational=_rotational(snapshot, pool),
        kernel=kernel_generation(snapshot.kernel_release),
        speed_max_kib_s=limit or snapshot.speed_limit_max_kb_s,
        # boost's max (presets/boost.toml: 2,000,000 KiB/s) is above what any disk does
        boost_max_kib_s=None,
    )


def _rotational(snapshot: Snapshot, pool: layout.Pool) -> bool | None:
    """Whether the pool's disks spin: any that does bounds a grow by its seeks; None unknown."""
    known = [snapshot.disk_rotational[d] for d in pool.disks if d in snapshot.disk_rotational]
    return any(known) if known else None


def _sync(conn: db.Connection, arrays: list[str], before: float) -> paces.MeasuredPace | None:
    """The newest sync's pace a disk: from its samples' progress when it has two, else (a
    completed run) its total over its duration."""
    run = plan_history.last_sync(conn, arrays, before)
    if run is None:
        return None
    what = f"the {run.action} of {run.array}"
    # last_sync reads only runs that ended
    assert run.finished is not None
    first = plan_history.progress_at(conn, run.id)
    last = plan_history.last_progress(conn, run.id)
    measured = _pace(first, last, 1.0, what, run.finished) if last is not None else None
    if measured is None and run.outcome == "completed":
        kib_s = run.total_blocks / (run.finished - run.started)
        measured = paces.MeasuredPace(kib_s, what, run.finished, run.total_blocks)
    if measured is None:
        return None
    limit = run.speed_max_kb_s
    held = limit is not None and measured.kib_s >= AT_MAX * limit
    return replace(measured, held_by_max=held)


def _grow(
    snapshot: Snapshot, conn: db.Connection, pool: layout.Pool, now: float, before: float
) -> tuple[paces.MeasuredPace | None, paces.MeasuredPace | None]:
    """The newest grow's pace before its knee and after it (the part it has run so far), per
    member: its progress share times the member's size (md counts a reshape per device; the
    simulator counts the old array's data)."""
    run = plan_history.last_grow(conn, [t.array for t in pool.tiers], before)
    if run is None:
        return None, None
    member = next(t.member_kib for t in pool.tiers if t.array == run.array)
    scale = member / run.total_blocks
    knee = _knee(snapshot, run)
    first = plan_history.progress_at(conn, run.id)
    last = plan_history.last_progress(conn, run.id)
    if knee is None or first is None or last is None:
        return None, None
    total, what = run.total_blocks, f"the grow of {run.array}"
    if run.finished is None:
        what += " (running)"
    when = run.finished or now
    at_knee = plan_history.progress_at(conn, run.id, knee * total)
    end = at_knee or last
    head = _pace(first, end, scale, what, when)
    tail = _pace(at_knee, last, scale, what, when) if at_knee is not None else None
    return head, tail


def _pace(
    start: tuple[float, int] | None, end: tuple[float, int], scale: float, what: str, when: float
) -> paces.MeasuredPace | None:
    if start is None or end[0] <= start[0] or end[1] <= start[1]:
        return None
    done = (end[1] - start[1]) * scale
    return paces.MeasuredPace(done / (end[0] - start[0]), what, when, int(done))


def _knee(snapshot: Snapshot, run: PlannerRun) -> float | None:
    """Where the grow's knee was: old / new data disks, from sysfs raid_disks "new (old)" while
    it runs; afterwards from the members now, one fewer before (DSM adds disks one at a time)."""
    state = snapshot.array(run.array)
    if state is None:
        return None
    raid_disks = state.sysfs.raid_disks if state.sysfs else None
    if run.finished is not None and state.array.raid_disks is not None:
        raid_disks = (state.array.raid_disks, state.array.raid_disks - 1)
    return grow_knee(state.array.level, raid_disks)


def _boosts(
    conn: db.Connection, arrays: list[str], before: float, kernel_release: str | None
) -> tuple[paces.Boost, paces.Boost]:
    """Boost's effect on a sync and on a grow: the newest measured here, else the model's for
    this kernel's generation."""
    sync = paces.History().boost_sync
    low, high = boost_model.MODEL_BOOST_RANGE
    ratio, figure = boost_model.model_ratio(kernel_release)
    grow = paces.Boost(ratio, low, high, "physics", f"not measured here: {figure}")
    spread = 1 + boost_model.MEASURED_BOOST_SPREAD
    found_sync = found_grow = False
    for effect in plan_history.boost_ratios(conn, arrays, before):
        ratio = effect.ratio
        measured = paces.Boost(
            ratio, ratio / spread, ratio * spread, "measured", f"measured on {effect.array}"
        )
        if effect.action == "reshape" and not found_grow:
            grow, found_grow = measured, True
        elif effect.action != "reshape" and not found_sync:
            sync, found_sync = measured, True
    return sync, grow


def shape(plan: ChangePlan) -> PlanBody:
    """The API's body: sizes in bytes, durations in seconds."""
    return PlanBody(
        change=plan.change.kind,
        disk_bytes=plan.change.disk_kib * KIB,
        member=plan.change.member,
        pool=plan.pool,
        arrays=list(plan.arrays),
        possible=plan.possible,
        refusals=list(plan.refusals),
        steps=[_step(i + 1, s) for i, s in enumerate(plan.steps)],
        total=plan_duration(plan.total) if plan.total is not None else None,
        boost_total=plan_duration(plan.boosted_total) if plan.boosted_total is not None else None,
        capacity_before=_capacity(plan.before),
        capacity_after=_capacity(plan.after) if plan.after is not None else None,
        notes=list(plan.notes),
        summary=summary(plan),
    )


def _step(order: int, step: timing.Step) -> PlanStep:
    return PlanStep(
        order=order,
        array=step.array,
        action=step.action,
        what=step.what,
        level_before=step.level_before,
        level_after=step.level_after,
        disks_before=step.disks_before,
        disks_after=step.disks_after,
        work_bytes=step.work_kib * KIB,
        knee=step.knee,
        duration=plan_duration(step.duration),
        boost_duration=plan_duration(step.boosted),
        source=step.source,
        why=step.why,
        boost_why=step.boost_why,
    )


def plan_duration(d: timing.Duration) -> PlanDuration:
    return PlanDuration(seconds=d.seconds, low_s=d.low, high_s=d.high)


def _capacity(c: Capacity) -> PlanCapacity:
    return PlanCapacity(
        usable_bytes=c.usable * KIB,
        protection_bytes=c.protection * KIB,
        unused_bytes=c.unused * KIB,
    )


def summary(plan: ChangePlan) -> str:
    """One sentence: "Adding an 8.0 TB disk: about 3 days, 2 with boost; 21.8 TB → 29.1 TB"."""
    size = tb(plan.change.disk_kib)
    a_disk = f"{a_or_an(size)} {size} disk"
    what = (
        f"Adding {a_disk}"
        if plan.change.kind == "add"
        else f"Replacing {plan.change.member} with {a_disk}"
    )
    if not plan.possible:
        return f"{what}: not possible: {plan.refusals[0]}"
    if plan.total is None or plan.boosted_total is None or plan.after is None:
        return f"{what}: nothing to rebuild or grow"
    return (
        f"{what}: about {span(plan.total.seconds)}, {span(plan.boosted_total.seconds)} with "
        f"boost; {tb(plan.before.usable)} → {tb(plan.after.usable)} usable"
    )


def span(seconds: float) -> str:
    """A duration as people say it: "40 min", "7 hours", "3 days"."""
    if seconds < 3600:
        return f"{max(round(seconds / 60), 1)} min"
    if seconds < 2 * 86400:
        hours = round(seconds / 3600)
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{seconds / 86400:.1f} days".replace(".0 days", " days")


def section(
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    change: Literal["add", "replace"] = "add",
    disk_tb: float | None = None,
    member: str | None = None,
) -> PlanSection:
    """The page's "Plan a change": the form's choices, and the plan when one was asked for."""
    found = pools(snapshot)
    disks = list(found[0].disks) if found else []
    section = PlanSection(change, disk_tb, member, disks, found[0].name if found else None)
    if disk_tb is None or not found:
        return section
    asked = ChangeRequest(change, int(disk_tb * 1e12), member if change == "replace" else None)
    try:
        return replace(section, plan=shape(plan_requested_change(snapshot, conn, asked, now)))
    except BadChange as error:
        return replace(section, error=str(error))
