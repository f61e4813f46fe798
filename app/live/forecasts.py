"""Rebuild a run's forecast from SQLite (once, when mdboost starts), order the SHR pool, and shape
the answer for the API from the sampler's present: one array, or the whole SHR pool."""

import dataclasses
from collections.abc import Callable

from app.diagnosis.verdicts import Diagnosis
from app.forecast import boost, model, physics, pool
from app.live.snapshot import Snapshot
from app.shapes import Body
from app.shapes.arrays import Run
from app.shapes.tuning import Session
from app.store import db, effects, history, journal, slower
from app.store.slower import SlowerPreset

BOOST_PRESET = "boost"


@dataclasses.dataclass(frozen=True)
class JournalNow:
    """What the tuning journal holds now, read once by a request and handed to each view that
    asks: the open session and the latest preset put back for making a sync slower, of each."""

    session: Session | None  # the open session as recorded (None: nothing is tuned)
    put_back: list[SlowerPreset]  # the latest finding of each preset, newest first

    @classmethod
    def read(cls, conn: db.Connection) -> "JournalNow":
        return cls(journal.open_session(conn), slower.latest_each(conn))

    def latest_put_back(self, preset: str | None = None) -> SlowerPreset | None:
        """The latest finding of `preset` (None: of any preset)."""
        return next((f for f in self.put_back if preset in (None, f.preset)), None)


# The bodies of GET /api/arrays/{name}/forecast and /api/pool/forecast. They sit beside their
# builder, not in app/shapes/, because they hold the forecast model's own dataclasses (Forecast,
# BoostEstimate, PoolForecast), and app/shapes/ sits below the models so that store may use it.
class ArrayForecast(Body):
    array: str
    run_id: int | None
    action: str | None
    now: float
    forecast: model.Forecast
    eta_in_s: float | None
    boost: boost.BoostEstimate | None  # the finish if boost were applied now
    boost_active: bool | None = None  # a preset is applied; absent while nothing runs


class PoolArray(Body):
    name: str
    state: str  # done | running | queued | coming (idle now; the running phase leaves it)
    forecast: model.Forecast | None


class PoolForecastBody(Body):
    now: float
    pool: pool.PoolForecast
    eta_in_s: float | None
    arrays: list[PoolArray]


def rebuild(
    conn: db.Connection, run_id: int, knee: float | None, kernel_release: str | None = None
) -> model.RunProgress:
    """A run's RunProgress from its stored samples and events: once, when mdboost (re)starts.
    `kernel_release` is the running kernel's (its generation's knee speed-up)."""
    progress = model.RunProgress(knee, kernel_release)
    events = [(e.ts, e.kind) for e in history.events(conn, run_id)]
    for sample, kind in model.with_events(history.run_samples(conn, run_id), events):
        ts, done, total, speed_min, speed_max, stripe_cache = sample
        progress.add(ts, done, total, physics.Limits(speed_min, speed_max, stripe_cache), kind)
    return progress


def array_eta(
    snapshot: Snapshot,
    conn: db.Connection,
    name: str,
    now: float,
    boost_max: float | None = None,
    journal_now: JournalNow | None = None,
) -> ArrayForecast:
    """The forecast of the array's running operation as of the sampler's last tick, with "what
    if I boost" while no preset is applied (the journal's open session says whether one is).
    `journal_now`: the journal as the caller read it already; else it is read here."""
    state = snapshot.array(name)
    run = state.run if state is not None else None
    if state is None or run is None:
        idle = model.Forecast("insufficient", "no operation is running on this array")
        return _view(name, None, idle, None, now)
    fc = state.forecast or model.Forecast("insufficient", "no samples of this run yet")
    session = journal_now.session if journal_now else journal.open_session(conn)
    boosted = session is not None and session.preset == BOOST_PRESET

    def put_back() -> SlowerPreset | None:  # read only when the estimate comes to it
        if journal_now is not None:
            return journal_now.latest_put_back(BOOST_PRESET)
        return slower.latest(conn, BOOST_PRESET)

    estimate = None
    if session is None:
        estimate = _boost_estimate(snapshot, conn, name, fc, None, boost_max, put_back)
    elif not boosted:
        # Another preset holds the run (auto-tune, a schedule): boost's gains were measured
        # over the untuned pace, so they scale that pace, never the tuned one.
        untuned = effects.untuned_speed(conn, session.id, name)
        estimate = (
            _boost_estimate(snapshot, conn, name, fc, untuned, boost_max, put_back)
            if untuned
            else None
        )
    if fc.settling and fc.regime == "revert" and fc.reason != model.REVERT_REASON:
        # The pace before tuning is not known (tuned before it was measured): nothing to scale.
        estimate = None
    view = _view(name, run, fc, estimate, now)
    # Set only here (the route leaves unset fields out): an idle array's answer has no such key.
    view.boost_active = session is not None
    return view


def offered_gain(estimate: boost.BoostEstimate | None) -> float | None:
    """The gain boost's estimate offers: its ratio, 1.0 when boost would not help, None when no
    estimate is offered (boost is on, or nothing runs)."""
    if estimate is None:
        return None
    return estimate.ratio if estimate.helps else 1.0


def diagnosis(
    snapshot: Snapshot, conn: db.Connection, name: str, now: float, boost_max: float | None = None
) -> Diagnosis | None:
    """The array's verdicts as of the last tick, their advice judged beside the boost estimate
    offered with them: what the page, the API and a push say of why a sync is slow."""
    state = snapshot.array(name)
    if state is None or state.diagnosis is None:
        return None
    estimate = array_eta(snapshot, conn, name, now, boost_max).boost
    return state.diagnosis.beside_boost(offered_gain(estimate))


def _cpu_bound(snapshot: Snapshot, name: str) -> tuple[str, float] | None:
    """The md thread near a full core, with its cores, when the last tick's diagnosis shows it."""
    state = snapshot.array(name)
    diagnosis = state.diagnosis if state is not None else None
    for verdict in diagnosis.verdicts if diagnosis is not None else ():
        if verdict.verdict == "cpu_bound" and not verdict.fading:
            return str(verdict.numbers["thread"]), float(verdict.numbers["cores"])
    return None


def _boost_estimate(
    snapshot: Snapshot,
    conn: db.Connection,
    name: str,
    fc: model.Forecast,
    untuned: float | None,
    boost_max: float | None,
    put_back: Callable[[], SlowerPreset | None],
) -> boost.BoostEstimate | None:
    """From this box's own measurements once it has them: this array's measured boost; else
    another array's of the same SHR pool, which sits on the same disks (md2's x5 says more about
    md3 than any model); else a boost mdboost put back here for making a sync slower; else
    boost measured over the untuned pace of any array of this box. Without any, the physics:
    the limits, md's thread near a full core, or the clean bench of this kernel (boost.py)."""
    ratio = effects.latest_ratio(conn, BOOST_PRESET, name)
    if ratio is not None:
        return boost.boost_forecast(fc, ratio, untuned_speed=untuned)
    for sibling in (m.name for m in snapshot.job.phases if m.name != name):
        ratio = effects.latest_ratio(conn, BOOST_PRESET, sibling)
        if ratio is not None:
            on = f"{sibling}, on the same disks"
            return boost.boost_forecast(fc, ratio, measured_on=on, untuned_speed=untuned)
    slower_here = put_back()
    if slower_here is not None:
        on = f"{slower_here.array} of this box, where mdboost put it back"
        return boost.boost_forecast(fc, slower_here.ratio, measured_on=on, untuned_speed=untuned)
    elsewhere = effects.latest_measured(conn, BOOST_PRESET)
    if elsewhere is not None and elsewhere.untuned:
        on = f"{elsewhere.array} of this box"
        return boost.boost_forecast(fc, elsewhere.ratio, measured_on=on, untuned_speed=untuned)
    disks = history.last_sync_pace(conn, name)
    found = boost.boost_forecast(
        fc,
        None,
        boost_max,
        untuned_speed=untuned,
        disks=disks,
        kernel_release=snapshot.kernel_release,
        cpu_bound=_cpu_bound(snapshot, name),
    )
    if found is None or elsewhere is None:
        return found
    # Boost was measured on this box, but only over settings already tuned, which says nothing
    # of its gain over the untuned pace: say so, never "boost has not been measured".
    measured = f"×{elsewhere.ratio:.1f} on {elsewhere.array}"
    note = f"boost measured {measured} over settings already tuned, not over the untuned pace"
    return dataclasses.replace(found, why=f"{found.why}; {note}")


def pool_eta(snapshot: Snapshot, now: float) -> PoolForecastBody:
    """The job as the last tick built it: phases done, running, queued and to come, and the
    finish of the whole job (app/live/job.py); nothing is derived again per request."""
    job = snapshot.job
    found = job.forecast or pool.PoolForecast("insufficient", "no array of the pool is syncing")
    return PoolForecastBody(
        now=now,
        pool=found,
        eta_in_s=found.eta - now if found.eta is not None else None,
        arrays=[PoolArray(name=m.name, state=m.state, forecast=m.forecast) for m in job.phases],
    )


def _view(
    name: str,
    run: Run | None,
    fc: model.Forecast,
    boost: boost.BoostEstimate | None,
    now: float,
) -> ArrayForecast:
    return ArrayForecast(
        array=name,
        run_id=run.id if run else None,
        action=run.action if run else None,
        now=now,
        forecast=fc,
        eta_in_s=fc.eta - now if fc.eta is not None else None,
        boost=boost,
    )
