"""View models of the dashboard: the array cards and their charts, past runs, the boost panel,
the pool and the footer. Each is a frozen dataclass built once, here; the templates read it."""

from dataclasses import dataclass

from fastapi import Request

from app.config import Settings
from app.diagnosis.verdicts import Diagnosis
from app.forecast.boost import NO_GAIN
from app.formats import FLAG_LABELS, ROLE_LABELS, array_title, drive_name, mb_s, ratio
from app.live import array_view
from app.live.forecasts import ArrayForecast, PoolForecastBody, array_eta, pool_eta
from app.live.sampler import DISK_FULL, Sampler
from app.live.snapshot import Snapshot
from app.md.access import HOW_TO_TUNE
from app.md.mdstat import Device, Sync
from app.planner.change import tb
from app.shapes.arrays import ArrayView, EventBody, Run
from app.shapes.tuning import Effect, PresetPlan, Schedules, Sweep, TuningStatus
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
PICTURE_W, PICTURE_H = 300.0, 100.0  # the no-JS picture's viewBox (templates/_chart.html)


@dataclass(frozen=True)
class DatabaseStatus:
    """The footer and the notices about the database, as the sampler and start-up found them."""

    keep_days: float  # samples older than this are dropped; 0 keeps them forever
    size: db.Size | None  # None until the sampler's maintenance first measured it
    moved_aside: MovedAside | None  # a damaged file start-up moved aside
    recovery: Recovery | None  # a session start-up found outside the database
    disk_full: str | None  # what the page says while the disk is full


@dataclass(frozen=True)
class ArrayMember:
    """A member as the owner knows its disk, beside the kernel's name."""

    name: str  # the kernel's, e.g. "sda5"
    flags: str  # mdstat's flag letters (F faulty, S spare, ...)
    flag_labels: list[str]  # the same in words
    drive: str | None  # DSM's name of the disk ("Drive 1"), where it has one
    model: str | None
    size: str | None  # "4.0 TB"


@dataclass(frozen=True)
class Marker:
    """A tuning change or a clock step on a run's chart, with the words its list shows."""

    ts: float  # unix seconds
    kind: str  # apply | revert | autotune | clock_step
    label: str
    preset: str | None  # the preset an apply or an auto-tune step wrote


@dataclass(frozen=True)
class ProgressPicture:
    """A run's progress line as an SVG path, for the page without JavaScript."""

    path: str  # in the viewBox PICTURE_W x PICTURE_H
    first: tuple[float, float]  # (unix seconds, percent) of its first point
    last: tuple[float, float]  # and of its last


@dataclass(frozen=True)
class RunChart:
    """A run's chart: its samples come from the API; the page gives its markers and, for a
    whole page, the picture drawn for browsers without JavaScript."""

    array: str
    run: Run
    markers: list[Marker]
    picture: ProgressPicture | None = None


@dataclass(frozen=True)
class ArrayCard:
    """One array's card: the API's array view plus what the page derives from it."""

    array: ArrayView
    sync: Sync | None  # md's operation, running or queued; None when md runs nothing
    running: bool  # an operation makes progress (a queued one does not)
    degraded: bool
    failed: bool
    failure: str | None  # which members took a failed array down, in words
    missing: int  # members missing from md's status
    collapsed: bool  # quiet, whole and working: one "healthy" line
    role_label: str
    title: str  # "Storage pool (md2)" on a Synology box
    synology: bool  # the box has DSM's layout
    members: list[ArrayMember]
    elapsed_s: float | None  # since its run started
    kernel_eta: float | None  # unix seconds: the kernel's own finish= guess
    eta: ArrayForecast | None  # mdboost's forecast and boost's estimate, while it runs
    why: Diagnosis | None  # why it is slow, judged beside that estimate
    chart: RunChart | None  # while it has a run


@dataclass(frozen=True)
class PastRun:
    """A run in the list of past runs: the API's run and the presets applied during it (an
    auto-tune's steps count as one) with their measured effect."""

    run: Run
    presets: list[str]
    ratios: dict[str, float]  # preset -> speed after / before, measured from the untuned pace


@dataclass(frozen=True)
class PastRunPage:
    """One run's page: the run and its chart."""

    past: PastRun
    chart: RunChart


@dataclass(frozen=True)
class BoostPanel:
    """The boost panel: GET /api/tuning's answer and what the page adds to it, with a plan to
    confirm, an error or the words for a change that worked when there is one."""

    tuning: TuningStatus
    autotune_said: str | None  # the auto-tune panel's one sentence
    running: bool  # some array syncs: boost has something to speed up
    readonly: str | None  # why this process may only watch
    may_change: bool  # this visitor may tune
    open_demo: bool
    signed_in: bool
    csrf: str | None  # the login session's, for the forms
    schedule: Schedules
    presets: list[str]  # the presets a schedule may name
    plan: PresetPlan | None = None  # boost's dry run, to confirm
    error: str | None = None  # a tuning action that failed, in words
    done: str | None = None  # a change that worked, in words
    schedule_error: str | None = None  # a schedule refused, in words


def database_status(
    settings: Settings,
    sampler: Sampler,
    moved_aside: MovedAside | None,
    recovery: Recovery | None = None,
) -> DatabaseStatus:
    """The footer's retention and database size, a damaged file moved aside at start and a
    session start-up found outside the database: all as the sampler's maintenance and the
    start-up found them (no file is opened here)."""
    return DatabaseStatus(
        keep_days=settings.keep_days,
        size=sampler.size,
        moved_aside=moved_aside,
        recovery=recovery,
        disk_full=DISK_FULL if sampler.disk_full_since is not None else None,
    )


def card(
    view: ArrayView,
    snapshot: Snapshot,
    conn: db.Connection,
    now: float,
    boost: BoostPanel,
    synology: bool = False,
    picture: bool = False,
) -> ArrayCard:
    """One array's card, beside the boost panel it is shown with: its measured effects label
    the chart's markers; `synology`: the box has DSM's layout, so md2 is called "Storage pool
    (md2)"; `picture`: a running array's chart carries its no-JS picture (whole pages)."""
    sync = view.sync
    running = sync is not None and sync.percent is not None
    run = view.run
    finish_min = sync.finish_min if sync is not None else None
    degraded = bool(view.degraded or (view.sysfs.degraded if view.sysfs else None))
    missing = (view.status or "").count("_")
    eta = array_eta(snapshot, view.name, now) if running and run else None
    state = snapshot.array(view.name)
    # Why it is slow, its advice judged by the tick beside the boost estimate the card offers.
    why = state.diagnosis if eta is not None and state is not None else None
    chart = None
    if run is not None:
        drawn = progress_picture(conn, run) if picture and running else None
        events = history.events_of_kinds(conn, [run.id], MARKER_EVENTS)[run.id]
        chart = RunChart(view.name, run, _markers(events, summaries(boost.tuning.effects)), drawn)
    return ArrayCard(
        array=view,
        sync=sync,
        running=running,
        degraded=degraded,
        failed=view.failed,
        failure=_failure(view, missing) if view.failed else None,
        missing=missing,
        # Only a quiet, whole, working array folds into one "healthy" line: a raid0 whose member
        # disk vanished is failed (array_state broken) with nothing degraded in mdstat.
        collapsed=not sync and not degraded and not view.failed and view.state == "active",
        role_label=ROLE_LABELS.get(view.role, view.role),
        title=array_title(view.name, view.role, synology),
        synology=synology,
        members=[_member(d, snapshot) for d in view.devices],
        elapsed_s=now - run.started if run else None,
        kernel_eta=now + finish_min * 60 if running and finish_min is not None else None,
        eta=eta,
        why=why,
        chart=chart,
    )


def _member(device: Device, snapshot: Snapshot) -> ArrayMember:
    """A member as the owner knows its disk: DSM's name where it has one, the model and the size
    the sampler read from sysfs, beside the kernel's name."""
    disk = snapshot.disks.get(device.name)
    return ArrayMember(
        name=device.name,
        flags=device.flags,
        flag_labels=[FLAG_LABELS.get(f, f) for f in device.flags],
        drive=drive_name(disk.disk) if disk else None,
        model=disk.model if disk else None,
        size=tb(disk.size_kib) if disk and disk.size_kib else None,
    )


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


def _markers(events: list[EventBody], summaries: dict[int, str]) -> list[Marker]:
    """Apply/revert events of a run with their measured effect, and steps of the wall clock
    (the line before one was moved onto the new time), for the chart and the list; a run's
    other events are not marked."""
    marks = []
    for event in events:
        detail = event.detail
        if event.kind == "apply":
            op_id = detail.get("op_id")
            label = summaries[op_id] if op_id in summaries else f"{detail.get('preset')} applied"
        elif event.kind == "revert":
            label = f"reverted ({detail.get('reason', 'requested')})"
        elif event.kind == "autotune":
            label = detail.get("label", "auto-tune")
        elif event.kind == "clock_step":
            label = f"the clock moved {_hours(detail.get('moved_s', 0.0))}"
        else:
            continue
        marks.append(Marker(event.ts, event.kind, label, detail.get("preset")))
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
    boost: BoostPanel,
    pictures: bool = False,
) -> list[ArrayCard]:
    """Failed first (md gave up on it: the owner sees that first), then running, then
    degraded, then data before DSM's own arrays; file order otherwise. `pictures`: the running
    arrays' charts carry their no-JS pictures (only whole pages show the chart)."""
    views = [array_view.array_view(state) for state in snapshot.arrays]
    synology = any(v.role == "system" for v in views)
    found = [card(v, snapshot, conn, now, boost, synology, pictures) for v in views]
    return sorted(
        found,
        key=lambda c: (not c.failed, not c.running, not c.degraded, c.array.role != "data"),
    )


def past_runs(conn: db.Connection, charted: list[ArrayCard]) -> list[PastRun]:
    """The newest runs, each with the presets applied during it and their measured effect; a
    run charted on a card brings its markers (its events are read once)."""
    marked = {c.chart.run.id: c.chart.markers for c in charted if c.chart is not None}
    runs = history.runs(conn, limit=PAST_RUNS)
    # Every run's applies and auto-tune steps (for the presets of a run no card charts) and
    # measured ratios, each in one statement for all the runs.
    unmarked = [run.id for run in runs if run.id not in marked]
    tunings = history.events_of_kinds(conn, unmarked, ("apply", "autotune")) if unmarked else {}
    ratios = history.measured_ratios(conn, [run.id for run in runs]) if runs else {}
    return [
        _with_tuning(
            run,
            marked[run.id] if run.id in marked else _markers(tunings[run.id], {}),
            ratios[run.id],
        )
        for run in runs
    ]


def _with_tuning(run: Run, markers: list[Marker], ratios: dict[str, float]) -> PastRun:
    """The run with the presets applied during it (an auto-tune's steps count as one)."""
    presets = [m.preset for m in markers if m.kind in ("apply", "autotune")]
    named = list(dict.fromkeys(p for p in presets if p))
    return PastRun(run=run, presets=named, ratios=ratios)


def past_run(tuner: Tuner, conn: db.Connection, run_id: int) -> PastRunPage | None:
    """One run's page: the run, its chart with its markers (from the run's own events, labelled
    with the effects measured) and its no-JS picture."""
    run = history.run(conn, run_id)
    if run is None:
        return None
    markers = _markers(run.events, summaries(tuning_view.recent_effects(tuner, conn)))
    chart = RunChart(run.array, run, markers, progress_picture(conn, run))
    ratios = history.measured_ratios(conn, [run.id])[run.id]
    return PastRunPage(past=_with_tuning(run, markers, ratios), chart=chart)


def boost_panel(
    request: Request,
    tuner: Tuner,
    conn: db.Connection,
    snapshot: Snapshot,
    plan: PresetPlan | None = None,
    error: str | None = None,
    schedule_error: str | None = None,
) -> BoostPanel:
    """The boost panel's state: GET /api/tuning's shape, plus a plan or an error when given."""
    access = get_tuning_access(request)
    why = "; ".join(access.problems)
    readonly = None if access.writable else f"Watching only ({why}): {HOW_TO_TUNE}."
    session = security.login_session(request, conn)
    open_demo = get_settings(request).demo_open
    known = tuning_view.facts(tuner, conn)
    tuning = tuning_view.status(tuner, conn, snapshot, known)
    return BoostPanel(
        tuning=tuning,
        autotune_said=autotune_said(tuning.autotune, tuning.state.kind == "auto-tuned"),
        running=any(state.array.syncing for state in snapshot.arrays),
        readonly=readonly,
        may_change=session is not None or open_demo,
        open_demo=open_demo,
        signed_in=session is not None,
        csrf=session.csrf if session else None,
        schedule=known.schedules,
        presets=[n for n, p in tuner.presets.items() if not p.restore_originals],
        plan=plan,
        error=error,
        schedule_error=schedule_error,
    )


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


def summaries(effects: list[Effect]) -> dict[int, str]:
    """Each apply's measured effect by its operation id, for the chart markers."""
    return {e.op_id: e.summary for e in effects}


def pool(snapshot: Snapshot, now: float) -> PoolForecastBody | None:
    """The pool view, when one job spans several arrays (an SHR expansion); else None."""
    found = pool_eta(snapshot, now)
    return found if len(found.arrays) > 1 else None


def progress_picture(conn: db.Connection, run: Run) -> ProgressPicture | None:
    """A run's progress as an SVG path, for the page without JavaScript: the
    chart's progress line at 120 evenly spaced times, drawn by the server. Not the
    chart's 500 downsampled samples: "/" draws it on each load, and its work must not grow with
    the run (tests/web/test_polls.py)."""
    points = history.progress_line(conn, run.array, run.started, run.finished, 120)
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    first, span = points[0][0], points[-1][0] - points[0][0]
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{(ts - first) / span * PICTURE_W:.1f},"
        f"{(100.0 - min(max(pct, 0.0), 100.0)) / 100.0 * PICTURE_H:.1f}"
        for i, (ts, pct) in enumerate(points)
    )
    return ProgressPicture(path=path, first=points[0], last=points[-1])
