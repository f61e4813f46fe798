"""View models of the dashboard: array cards, past runs, the boost panel, the pool."""

from dataclasses import asdict
from typing import Any

from fastapi import Request

from app.config import Settings
from app.forecast.boost import NO_GAIN
from app.formats import FLAG_LABELS, ROLE_LABELS, array_title, drive_name, mb_s, ratio
from app.live import array_view
from app.live.forecasts import PoolForecastBody, array_eta, offered_gain, pool_eta
from app.live.sampler import DISK_FULL, Sampler
from app.live.snapshot import Snapshot
from app.md.access import HOW_TO_TUNE
from app.md.mdstat import Device
from app.planner.change import tb
from app.shapes.arrays import ArrayView, Run
from app.shapes.tuning import Sweep
from app.store import db, history
from app.store.opening import MovedAside
from app.tuning import view as tuning_view
from app.tuning.autotune.record import setting_label
from app.tuning.session.reconcile import Recovery
from app.tuning.tuner import Tuner
from app.web import security
from app.web.deps import get_settings, get_tuning_access

PAST_RUNS = 20
# The events a run's chart marks: people's and sweeps' changes, not its diagnoses (which grow
# with the run's length).
MARKER_EVENTS = ("apply", "revert", "autotune", "clock_step")


def database_status(
    settings: Settings,
    sampler: Sampler,
    moved_aside: MovedAside | None,
    recovery: Recovery | None = None,
) -> dict[str, Any]:
    """The footer's retention and database size, a damaged file moved aside at start and a
    session start-up found outside the database: all as the sampler's maintenance and the
    start-up found them (no file is opened here)."""
    return {
        "keep_days": settings.keep_days,
        "size": sampler.size,
        "moved_aside": moved_aside,
        "recovery": recovery,
        "disk_full": DISK_FULL if sampler.disk_full_since is not None else None,
    }


def card(
    view: ArrayView,
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    summaries: dict[int, str],
    boost_max: float | None = None,
    synology: bool = False,
) -> dict[str, Any]:
    """One array's card: the API's array view plus what the page derives from it; `boost_max`
    (KiB/s, the boost preset's sync_speed_max) for the estimate of a run held by its limit;
    `synology`: the box has DSM's layout, so md2 is called "Storage pool (md2)"."""
    sync = view.sync
    running = sync is not None and sync.percent is not None
    run = view.run
    finish_min = sync.finish_min if sync is not None else None
    degraded = bool(view.degraded or (view.sysfs.degraded if view.sysfs else None))
    missing = (view.status or "").count("_")
    eta = array_eta(snapshot, conn, view.name, now, boost_max) if running and run else None
    state = snapshot.array(view.name)
    # Why it is slow, its advice beside the boost estimate the same card offers.
    why = (
        state.diagnosis.beside_boost(offered_gain(eta.boost))
        if eta is not None and state is not None and state.diagnosis is not None
        else None
    )
    return {
        "array": view,
        "sync": sync or {},
        "running": running,
        "degraded": degraded,
        "failed": view.failed,
        "failure": _failure(view, missing) if view.failed else None,
        "missing": missing,
        # Only a quiet, whole, working array folds into one "healthy" line: a raid0 whose member
        # disk vanished is failed (array_state broken) with nothing degraded in mdstat.
        "collapsed": not sync and not degraded and not view.failed and view.state == "active",
        "role_label": ROLE_LABELS.get(view.role, view.role),
        "title": array_title(view.name, view.role, synology),
        "synology": synology,
        "members": [_member(d, snapshot) for d in view.devices],
        "elapsed_s": now - run.started if run else None,
        "kernel_eta": now + finish_min * 60 if running and finish_min is not None else None,
        "eta": eta,
        "why": why,
        "markers": _markers(conn, run.id, summaries) if run else [],
    }


def _member(device: Device, snapshot: Snapshot) -> dict[str, Any]:
    """A member as the owner knows its disk: DSM's name where it has one, the model and the size
    the sampler read from sysfs, beside the kernel's name."""
    disk = snapshot.disks.get(device.name)
    return {
        **asdict(device),
        "flag_labels": [FLAG_LABELS.get(f, f) for f in device.flags],
        "drive": drive_name(disk.disk) if disk else None,
        "model": disk.model if disk else None,
        "size": tb(disk.size_kib) if disk and disk.size_kib else None,
    }


def _failure(view: ArrayView, missing: int) -> str:
    """Which members took a failed array down, for the page's one sentence about it."""
    faulty = [d.name for d in view.devices if "F" in d.flags]
    if len(faulty) == 1:
        return f"its member {faulty[0]} is faulty"
    if faulty:
        return f"its members {', '.join(faulty[:-1])} and {faulty[-1]} are faulty"
    if missing:
        total = view.raid_disks or len(view.status or "")
        return f"{missing} of its {total} members are missing"
    return "md reports it broken"


def _markers(conn: db.Connection, run_id: int, summaries: dict[int, str]) -> list[dict[str, Any]]:
    """Apply/revert events of a run with their measured effect, and steps of the wall clock
    (the line before one was moved onto the new time), for the chart and the list."""
    marks = []
    for event in history.events(conn, run_id, MARKER_EVENTS):
        detail = event["detail"]
        if event["kind"] == "apply":
            label = summaries.get(detail.get("op_id"), f"{detail.get('preset')} applied")
        elif event["kind"] == "revert":
            label = f"reverted ({detail.get('reason', 'requested')})"
        elif event["kind"] == "autotune":
            label = detail.get("label", "auto-tune")
        elif event["kind"] == "clock_step":
            label = f"the clock moved {_hours(detail.get('moved_s', 0.0))}"
        else:
            continue
        marks.append({"ts": event["ts"], "kind": event["kind"], "label": label})
    return marks


def _hours(seconds: float) -> str:
    """+24 h, -1 h, +90 s: how far the wall clock stepped."""
    if abs(seconds) >= 3600:
        return f"{seconds / 3600:+.3g} h"
    return f"{seconds / 60:+.3g} min" if abs(seconds) >= 60 else f"{seconds:+.0f} s"


def cards(
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    summaries: dict[int, str],
    boost_max: float | None = None,
) -> list[dict[str, Any]]:
    """Failed first (md gave up on it: the owner sees that first), then running, then
    degraded, then data before DSM's own arrays; file order otherwise."""
    views = [array_view.array_view(state) for state in snapshot.arrays]
    synology = any(v.role == "system" for v in views)
    found = [card(v, snapshot, conn, now, summaries, boost_max, synology) for v in views]
    return sorted(
        found,
        key=lambda c: (
            not c["failed"],
            not c["running"],
            not c["degraded"],
            c["array"].role != "data",
        ),
    )


def past_runs(conn: db.Connection) -> list[dict[str, Any]]:
    """The newest runs, each with the presets applied during it and their measured effect."""
    return [_with_tuning(conn, run) for run in history.runs(conn, limit=PAST_RUNS)]


def _with_tuning(conn: db.Connection, run: Run) -> dict[str, Any]:
    """The run with the presets applied during it (an auto-tune's steps count as one): the
    page's context, the API's run and two fields more."""
    tuned = history.events(conn, run.id, ("apply", "autotune"))
    presets = [e["detail"].get("preset") for e in tuned]
    named = list(dict.fromkeys(p for p in presets if p))
    return {**run.model_dump(), "presets": named, "ratios": history.measured_ratios(conn, run.id)}


def past_run(conn: db.Connection, run_id: int, summaries: dict[int, str]) -> dict[str, Any] | None:
    """One run's page: the run, its chart's card-shaped context, its markers."""
    found = history.run(conn, run_id)
    if found is None:
        return None
    run = _with_tuning(conn, found)
    return {
        "run": run,
        "card": {
            "array": {"name": run["array"], "run": run},
            "markers": _markers(conn, run_id, summaries),
        },
    }


def boost_panel(
    request: Request, tuner: Tuner, conn: db.Connection, snapshot: Snapshot, **extra: Any
) -> dict[str, Any]:
    """The boost panel's state: GET /api/tuning's shape, plus a plan or an error when given."""
    access = get_tuning_access(request)
    why = "; ".join(access.problems)
    readonly = None if access.writable else f"Watching only ({why}): {HOW_TO_TUNE}."
    session = security.login_session(request, conn)
    open_demo = get_settings(request).demo_open
    tuning = tuning_view.status(tuner, conn, snapshot)
    return {
        "tuning": tuning,
        "autotune_said": autotune_said(tuning.autotune, tuning.state.kind == "auto-tuned"),
        "running": any(state.array.syncing for state in snapshot.arrays),
        "readonly": readonly,
        "may_change": session is not None or open_demo,
        "open_demo": open_demo,
        "signed_in": session is not None,
        "csrf": session.csrf if session else None,
        "schedule": tuner.scheduler.view(conn, tuner.clock()),
        "presets": [n for n, p in tuner.presets.items() if not p.restore_originals],
        "boost_max_kb_s": _boost_max(tuner),
        **extra,
    }


def autotune_said(sweep: Sweep | None, holds: bool = True) -> str | None:
    """The auto-tune panel's one sentence: what it kept and what that gained over
    the speed it found, in words; its table and remarks go under Details. `holds`: its
    settings are still on (after a revert or another preset it says what it found, not "kept")."""
    if sweep is None or sweep.state == "running":
        return None
    if sweep.state != "done":
        why = (sweep.reason or "no reason given").split("; ")[0]
        return f"Auto-tune {sweep.state}: {why}."
    chosen = sweep.chosen or {}
    steps = [s for s in sweep.steps if s.speed_kb_s]
    found = next((s for s in steps if s.role == "start"), None)
    kept = [s for s in steps if chosen.get(s.knob) == s.value and s.score is not None]
    if not kept or found is None:
        return f"Auto-tune {(sweep.reason or 'is done').split('; ')[0]}."
    before, after = found.speed_kb_s, kept[-1].speed_kb_s
    assert before and after  # `steps` holds measured steps only
    best = after / before
    what = ", ".join(setting_label(knob, value) for knob, value in chosen.items())
    if not holds:
        return (
            f"Auto-tune found {what} best (×{ratio(best)} the speed it found); "
            "its settings are no longer on."
        )
    if best < NO_GAIN:
        return f"Auto-tune found nothing faster than the settings it found; it kept {what}."
    return (
        f"Auto-tune made the job ×{ratio(best)} faster ({mb_s(before)} → {mb_s(after)}) "
        f"and kept {what}."
    )


def _boost_max(tuner: Tuner) -> float | None:
    """The max limit the boost preset writes (KiB/s), when it names one."""
    preset = tuner.presets.get("boost")
    settings = preset.settings if preset is not None else ()
    value = next((s.value for s in settings if s.knob == "sync_speed_max"), None)
    return float(value) if value is not None and value.isdigit() else None


def summaries(boost: dict[str, Any]) -> dict[int, str]:
    """Each apply's measured effect by its operation id, for the chart markers."""
    return {e.op_id: e.summary for e in boost["tuning"].effects}


def pool(snapshot: Snapshot, now: float) -> PoolForecastBody | None:
    """The pool view, when one job spans several arrays (an SHR expansion); else None."""
    found = pool_eta(snapshot, now)
    return found if len(found.arrays) > 1 else None


PICTURE_W, PICTURE_H = 300.0, 100.0  # the no-JS picture's viewBox (templates/_chart.html)


def progress_picture(
    conn: db.Connection, array: str, started: float, finished: float | None
) -> dict[str, Any] | None:
    """A run's progress as an SVG path, for the page without JavaScript: the
    chart's progress line at 120 evenly spaced times, drawn by the server. Not the
    chart's 500 downsampled samples: "/" draws it on each load, and its work must not grow with
    the run (tests/web/test_polls.py)."""
    points = history.progress_line(conn, array, started, finished, 120)
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    first, span = points[0][0], points[-1][0] - points[0][0]
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{(ts - first) / span * PICTURE_W:.1f},"
        f"{(100.0 - min(max(pct, 0.0), 100.0)) / 100.0 * PICTURE_H:.1f}"
        for i, (ts, pct) in enumerate(points)
    )
    return {"path": path, "first": points[0], "last": points[-1]}
