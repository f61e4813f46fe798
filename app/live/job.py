"""The owner's job, as DSM shows it: an SHR expansion, a rebuild after a swap or a scrub is one
job of several md phases: the job, not the array, is what the owner started and waits for.
Built once a tick from what the tick read and the runs in SQLite; the page, the API,
notifications and /metrics read it.

The phases md itself knows of are the arrays syncing now and those it holds back
(resync=DELAYED). DSM starts the next array of an expansion only once the running one ends, so
md shows nothing of it until then: the phases to come are read from the pool's layout as the
planner reads it, the running grow's new disk reaching the tiers above it (app/planner).
"""

from collections.abc import Callable, Mapping
from dataclasses import replace

from app.forecast import model
from app.forecast.physics import knee_speedup
from app.forecast.pool import PoolMember, pool_forecast
from app.live.array_view import role_of
from app.live.snapshot import Job
from app.md.attributes import ArraySysfs
from app.md.mdstat import PARITY_DISKS, Array, MdStat
from app.planner import layout, paces
from app.planner.change import SAME_SIZE, BadChange, Change, ChangePlan, plan_change
from app.planner.timing import data_disks
from app.shapes.arrays import Run
from app.store import history
from app.store.db import Connection

# An SHR pool's arrays reshape one after another: a run that completed this long before the
# next one started still belongs to the same expansion.
POOL_CHAIN_S = 3600.0
# DSM begins an expansion's next array seconds after the last ends (several ticks); the job
# keeps its phases to come this long while md shows the pool idle, so that what was meant for
# the whole job (boost) does not end in the gap. Past it the job is over.
PHASE_GAP_S = 600.0


def pools(md: MdStat, sysfs: Mapping[str, ArraySysfs]) -> list[layout.Pool]:
    """The box's data pools as the tick read them, largest first (a grow's member size from its
    old member count, sysfs raid_disks "new (old)")."""
    data = [a for a in md.arrays if role_of(a) == "data" and a.devices]
    system = [a for a in md.arrays if role_of(a) != "data"]
    old = {
        name: found.raid_disks[1]
        for name, found in sysfs.items()
        if found.raid_disks is not None and found.raid_disks[1] is not None
    }
    return layout.pools(data, system, old) if data else []


def build(
    conn: Connection,
    md: MdStat,
    sysfs: Mapping[str, ArraySysfs],
    disk_kib: Mapping[str, int],
    forecast_of: Callable[[Array], model.Forecast],
    kernel_release: str | None,
    open_runs: Mapping[str, Run],
    previous: Job | None = None,
    now: float | None = None,
) -> Job:
    """The job now: the data arrays done (recently, in this job), running, queued and to come,
    and its finish. `forecast_of(array)` gives a running array's forecast (the tick's), and
    `open_runs` each array's open run as the tick read them; a phase
    that has just begun keeps the turn the `previous` tick's job gave it until its own pace is
    measured, so the job's finish never blanks out between two phases."""
    data = [a for a in md.arrays if role_of(a) == "data"]
    running = [a for a in data if a.syncing]
    if not running:
        return _between_phases(previous, now)
    queued = [a for a in data if a.queued]
    starts = [run.started for a in running if (run := open_runs.get(a.name)) is not None]
    done = []
    for array in data:
        if array in running or array in queued:
            continue
        last = history.last_run(conn, array.name)
        if (
            starts
            and last is not None
            and last.outcome == "completed"
            and last.finished is not None
            and last.finished >= min(starts) - POOL_CHAIN_S
        ):
            done.append((last.finished, array))
    phases = [PoolMember(a.name, "done", a.blocks) for _, a in sorted(done)]
    phases += [
        PoolMember(a.name, "running", a.blocks, _carried(forecast_of(a), a.name, previous, now))
        for a in running
    ]
    phases += [PoolMember(a.name, "queued", a.blocks) for a in queued]
    known = {p.name for p in phases}
    phases += [p for p in to_come(md, sysfs, disk_kib, running[0]) if p.name not in known]
    forecast = pool_forecast(phases, knee_speedup(kernel_release)[0])
    return Job(tuple(phases), forecast, tuple(pool_after(md, sysfs, disk_kib)))


def _between_phases(previous: Job | None, now: float | None) -> Job:
    """Nothing syncs: the `previous` tick's job with its running phase done while phases are
    to come and the gap is short, else no job. Its finish is the one planned at the last
    phase's end: the next phase takes its turn from it (_carried)."""
    if previous is None or now is None or not previous.to_come:
        return Job()
    since = previous.between_since if previous.between_since is not None else now
    if now - since > PHASE_GAP_S:
        return Job()
    phases = tuple(
        replace(p, state="done", forecast=None) if p.state == "running" else p
        for p in previous.phases
    )
    # No phase runs: the page names none as the running one ("phase 1 of 2" would be md2's).
    planned = replace(previous.forecast, phase=None) if previous.forecast else None
    return Job(phases, planned, between_since=since)


def _carried(
    forecast: model.Forecast, name: str, previous: Job | None, now: float | None
) -> model.Forecast:
    """A phase's own forecast, or while it has none yet the finish the last tick planned for
    its turn (settling: the pace of the phase before, the same disks)."""
    if forecast.status in ("ok", "settling") or previous is None or previous.forecast is None:
        return forecast
    planned = next((f for f in previous.forecast.finishes if f.name == name), None)
    if planned is None or planned.eta is None or now is None or planned.eta <= now:
        return forecast
    ahead = next((p for p in previous.phases if p.name == name), None)
    work = ahead.work_blocks if ahead is not None else None
    return replace(
        forecast,
        status="settling",
        reason="the pace of the phase before, until this one's is measured",
        eta=planned.eta,
        low=planned.low,
        high=planned.high,
        as_of=now,
        speed_blocks_s=work / (planned.eta - now) if work else None,
        knee=ahead.knee if ahead is not None else None,
        settling=True,
    )


def to_come(
    md: MdStat, sysfs: Mapping[str, ArraySysfs], disk_kib: Mapping[str, int], running: Array
) -> list[PoolMember]:
    """The phases the running one leaves to DSM, lowest tier first: after a grow, each tier the
    new disk reaches grows onto it too (and new tiers are made above), as the planner plans an
    added disk; after a rebuild, each other degraded tier of the pool rebuilds in turn."""
    found = pools(md, sysfs)
    pool = next((p for p in found if any(t.array == running.name for t in p.tiers)), None)
    sync = running.sync
    if pool is None or sync is None or not sync.total_blocks:
        return []
    tier = next(t for t in pool.tiers if t.array == running.name)
    if sync.action == "recovery":
        return [
            PoolMember(t.array, "coming", None, None, t.member_kib)
            for t in pool.tiers
            if t.degraded and t.array != running.name
        ]
    expansion = _expansion(pool, running, sysfs, disk_kib)
    if expansion is None:
        return []
    plan, _ = expansion
    # md counts a reshape per device of the new layout (raid5.c: resync_max_sectors is
    # dev_sectors); the simulator counts the old array's data. The running phase says which.
    old_count = len(tier.disks) - 1
    old_data = _old_data(tier.level, old_count)
    per_old_data = old_data > 1 and abs(sync.total_blocks - tier.member_kib * old_data) < abs(
        sync.total_blocks - tier.member_kib
    )
    coming = []
    for step in plan.steps:
        if step.array == running.name:
            continue
        work = step.work_kib
        if per_old_data and step.action == "grow" and step.level_before is not None:
            work *= _old_data(step.level_before, step.disks_before)
        coming.append(PoolMember(step.array, "coming", None, None, work, step.knee))
    return coming


def pool_after(
    md: MdStat, sysfs: Mapping[str, ArraySysfs], disk_kib: Mapping[str, int]
) -> list[layout.Pool]:
    """The box's pools as the running expansion will leave them (each tier the new disk reaches
    grown onto it, the tiers made above it), for a plan made while it runs; pools with no
    expansion running as they are."""
    found = pools(md, sysfs)
    running = {a.name: a for a in md.arrays if a.syncing}
    out = []
    for pool in found:
        grow = next((running[t.array] for t in pool.tiers if t.array in running), None)
        expansion = _expansion(pool, grow, sysfs, disk_kib) if grow is not None else None
        out.append(pool if expansion is None else _grown(pool, *expansion, disk_kib))
    return out


def _expansion(
    pool: layout.Pool,
    running: Array,
    sysfs: Mapping[str, ArraySysfs],
    disk_kib: Mapping[str, int],
) -> tuple[ChangePlan, str] | None:
    """A grow running on `pool` as the planner would plan it on the pool before it: the added
    disk's plan, and that disk; None when the running sync is no grow onto one new disk."""
    sync = running.sync
    raid_disks = sysfs[running.name].raid_disks if running.name in sysfs else None
    if sync is None or sync.action != "reshape" or raid_disks is None or raid_disks[1] is None:
        return None
    tier = next(t for t in pool.tiers if t.array == running.name)
    old_count = raid_disks[1]
    new_disks = tier.disks[old_count:]
    if len(new_disks) != 1 or new_disks[0] not in disk_kib:
        return None  # DSM adds disks one at a time; anything else is not an expansion we know
    before = replace(
        pool,
        tiers=tuple(replace(t, disks=t.disks[:old_count]) if t is tier else t for t in pool.tiers),
    )
    try:
        plan = plan_change(before, Change("add", disk_kib[new_disks[0]]), paces.History(), 0.0)
    except BadChange:
        return None
    return plan, new_disks[0]


def _grown(
    pool: layout.Pool, plan: ChangePlan, new_disk: str, disk_kib: Mapping[str, int]
) -> layout.Pool:
    """`pool` once `plan` (its running expansion) is done: each grown tier on the new disk too,
    idle, and each tier made above on the disks that reach it."""
    steps = {s.array: s for s in plan.steps}
    tiers = []
    for tier in pool.tiers:
        step = steps.get(tier.array)
        if step is None or step.action != "grow":
            tiers.append(replace(tier, sync=None))
            continue
        disks = tier.disks if new_disk in tier.disks else (*tier.disks, new_disk)
        tiers.append(replace(tier, level=step.level_after, disks=disks, sync=None))
    reach = {
        d: max(pool.data_kib(d), disk_kib.get(d, 0) - pool.overhead_kib)
        for d in (*pool.disks, new_disk)
    }
    bottom = tiers[-1].top_kib
    for step in (s for s in plan.steps if s.action == "create"):
        top = bottom + step.work_kib
        disks = tuple(d for d, kib in reach.items() if kib >= top * (1 - SAME_SIZE))
        tiers.append(
            layout.TierArray(
                step.array, step.level_after, disks, None, step.work_kib, bottom, False, None
            )
        )
        bottom = top
    return replace(pool, tiers=tuple(tiers))


def _old_data(level: str, disks: int) -> int:
    """Data disks of an array before its grow (a raid1 holds one disk's worth)."""
    if level not in PARITY_DISKS:
        return 1
    return max(data_disks(level, disks), 1)


def refreshed(job: Job, forecasts: Mapping[str, model.Forecast | None], kernel: str | None) -> Job:
    """The job with its running phases' forecasts replaced (a write's own read-back)."""
    phases = tuple(
        replace(p, forecast=forecasts.get(p.name) or p.forecast) if p.state == "running" else p
        for p in job.phases
    )
    if job.running is None:
        return job
    return replace(job, phases=phases, forecast=pool_forecast(phases, knee_speedup(kernel)[0]))
