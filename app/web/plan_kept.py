"""Does a plan keep its word? Beside a rebuild or grow that happened, what the planner
would have said just before it began, from only the history known then, and its error."""

from dataclasses import dataclass, replace

from app.live.snapshot import Snapshot
from app.planner import layout, timing
from app.shapes.arrays import Run
from app.shapes.change_plan import PlanDuration
from app.store import db, plan_history
from app.web import change_planning

PLANNED_ACTIONS = ("reshape", "recovery")


@dataclass(frozen=True)
class PlanKept:
    """What the planner would have said just before a run began, beside what the run took."""

    planned: PlanDuration
    source: str  # what the plan rests on: measured here, or the model
    why: str  # the plan's reasoning, in words
    real_s: float | None  # how long the run took, once it completed
    error: float | None  # (planned - real) / real, once it completed
    within_range: bool | None  # the real time fell in the plan's range, once it completed


def beside(snapshot: Snapshot, conn: db.Connection, run: Run) -> PlanKept | None:
    """The plan for `run` made from what was known before it started, and how it compares: the
    error is (planned - real) / real once the run completed. None for other runs, or when the
    array is no longer a data array of a pool mdboost can plan."""
    if run.action not in PLANNED_ACTIONS:
        return None
    pool = next((p for p in change_planning.pools(snapshot) if run.array in _arrays(p)), None)
    if pool is None:
        return None
    tier = next(t for t in pool.tiers if t.array == run.array)
    started = run.started
    history = change_planning.pool_history(
        snapshot,
        conn,
        pool,
        started,
        before=started,
        limit=plan_history.first_limit(conn, run.id),
    )
    if run.action == "recovery":
        step = timing.rebuild(tier, history, started)
    else:  # the grow that gave the array its last member (DSM adds one disk at a time)
        step = timing.grow(replace(tier, disks=tier.disks[:-1]), tier.level, history, started)
    finished = run.finished if run.outcome == "completed" else None
    real = finished - started if finished is not None else None
    planned = step.duration
    return PlanKept(
        planned=change_planning.plan_duration(planned),
        source=step.source,
        why=step.why,
        real_s=real,
        error=(planned.seconds - real) / real if real else None,
        within_range=planned.low <= real <= planned.high if real else None,
    )


def _arrays(pool: layout.Pool) -> list[str]:
    return [t.array for t in pool.tiers]
