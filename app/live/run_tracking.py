"""A run's life: when a sync's run starts, restarts or ends, and how it ended (md has no
"finished" flag)."""

import logging

from app.forecast.model import RESTART_DROP
from app.kernel.host import ARRAY_NAME, Host
from app.live.tick import FinishedRun
from app.md import mdstat
from app.records import OpenRun, SampledProgress
from app.store import run_log
from app.store.db import Connection

log = logging.getLogger(__name__)

# A sync that ends between two ticks was judged done if its pace could have covered what was left
# in the time since the last sample; half as much again allows for md's pace rising near the end
# (a check's last stripes run faster than its first) without calling an owner's stop "completed".
REACHABLE_SLACK = 1.5
RAISED_WITHIN_S = 600.0  # how far back before the last sample a lower max limit still counts


def track(
    conn: Connection,
    host: Host,
    array: mdstat.Array,
    degraded: int | None,
    run: OpenRun | None,
    now: float,
    finished: list[FinishedRun],
    max_kb_s: float | None = None,
) -> int | None:
    """The run this sample belongs to: the open one, else a new one when a sync runs (None when
    none does); ends the open run when the array went idle, changed action or restarted.
    `degraded` is the members this tick finds missing; `max_kb_s` its effective max limit now."""
    sync = array.sync if array.syncing else None
    if sync is None:
        if run is not None:
            outcome = _outcome_when_idle(conn, host, run, degraded, now, max_kb_s)
            finish(conn, run, outcome, now, finished)
        return None
    if run is not None:
        if run.action != sync.action:
            finish(conn, run, "interrupted", now, finished)
        elif _restarted(conn, run, sync):
            finish(conn, run, "restarted", now, finished)
        else:
            return run.id
    run_id = run_log.start_run(conn, array.name, sync.action, now, sync.total_blocks)
    log.info("%s: %s started (run %s)", array.name, sync.action, run_id)
    return run_id


def finish(
    conn: Connection, run: OpenRun, outcome: str, now: float, finished: list[FinishedRun]
) -> None:
    """Close a run with its outcome (completed, interrupted, restarted, vanished)."""
    run_log.end_run(conn, run.id, outcome, now)
    log.info("%s: %s run %s ended: %s", run.array, run.action, run.id, outcome)
    finished.append(FinishedRun(run.id, run.array, run.action, outcome))


def _restarted(conn: Connection, run: OpenRun, sync: mdstat.Sync) -> bool:
    last = run_log.newest_sample(conn, run.id)
    if last is None or last.done_blocks is None or sync.done_blocks is None:
        return False
    total = sync.total_blocks or last.total_blocks or 0
    return bool(total) and last.done_blocks - sync.done_blocks > RESTART_DROP * total


def _outcome_when_idle(
    conn: Connection,
    host: Host,
    run: OpenRun,
    degraded: int | None,
    now: float,
    max_kb_s: float | None,
) -> str:
    """Completed or interrupted. md has no "finished" flag: ask what md keeps per action, else
    judge from the last sample, which on a real kernel can be far below 100 % when a short
    check or resync ends between two ticks (tests/realkernel)."""
    if run.action == "recovery" and degraded is not None:
        return "completed" if degraded == 0 else "interrupted"
    if run.action in ("resync", "reshape") and ARRAY_NAME.fullmatch(run.array):
        # resync_start and reshape_position read "none" once the job is done (md.rst).
        attr = "resync_start" if run.action == "resync" else "reshape_position"
        text = host.read(host.md_attr_path(run.array, attr))
        if text is not None:
            return "completed" if text.strip() == "none" else "interrupted"
    if run.action in ("check", "repair") and ARRAY_NAME.fullmatch(run.array):
        # md_do_sync() keeps where a stopped check got to in sync_min, for the next one to go on
        # from, and puts it back to 0 when one ends at the end; 0 also follows a check stopped
        # before its first checkpoint, so only a position says anything.
        text = host.read(host.md_attr_path(run.array, "sync_min"))
        if text is not None and text.strip().isdigit() and int(text) > 0:
            return "interrupted"
    last = run_log.newest_progress(conn, run.id)
    if last is None or not last.total_blocks or last.done_blocks is None:
        return "completed"
    remaining = last.total_blocks - last.done_blocks
    reachable = _pace(conn, run, last, max_kb_s) * max(now - last.ts, 0.0) * REACHABLE_SLACK
    done = remaining <= 0.01 * last.total_blocks or reachable >= remaining
    return "completed" if done else "interrupted"


def _pace(conn: Connection, run: OpenRun, last: SampledProgress, max_kb_s: float | None) -> float:
    """How fast the run went, in blocks a second: the faster of md's speed= in the last sample and
    the run's own average. md's speed= averages over its last few marks, so in the first seconds
    of a short check it reads a fraction of the pace the check then ends at."""
    first = run_log.oldest_progress(conn, run.id)
    average = 0.0
    if first is not None and first.done_blocks is not None and last.ts > first.ts:
        done = (last.done_blocks or 0) - first.done_blocks
        average = max(done, 0) / (last.ts - first.ts)
    pace = max(last.speed_kb_s or 0.0, average)
    if max_kb_s:
        # A max limit raised since (a check crawled, then was let go): the run may have ended at
        # the new one, while md's speed= and the run's average still told of the old one.
        lowest = run_log.lowest_max_kb_s(conn, run.id, last.ts - RAISED_WITHIN_S)
        if lowest is not None and max_kb_s > lowest:
            return max(pace, max_kb_s)
    return pace
