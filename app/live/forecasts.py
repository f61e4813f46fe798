"""Rebuild a run's forecast from SQLite (once, when mdboost starts), order the SHR pool, and shape
the answer for the API from the sampler's present: one array, or the whole SHR pool."""

import dataclasses
from collections.abc import Iterable

from app.diagnosis.verdicts import Diagnosis
from app.forecast import boost, model, physics, pool
from app.live.snapshot import Snapshot
from app.records import MeasuredEffect
from app.shapes import Body
from app.shapes.arrays import Run
from app.shapes.tuning import Session
from app.store import db, effects, history, journal, slower
from app.store.slower import SlowerPreset

BOOST_PRESET = "boost"


@dataclasses.dataclass(frozen=True)
class JournalNow:
    """What the tuning journal holds now, read once by a request for the boost panel: the open
    session and the latest preset put back for making a sync slower, of each."""

    session: Session | None  # the open session as recorded (None: nothing is tuned)
    put_back: list[SlowerPreset]  # the latest finding of each preset, newest first

    @classmethod
    def read(cls, conn: db.Connection) -> "JournalNow":
        return cls(journal.open_session(conn), slower.latest_each(conn))

    def latest_put_back(self) -> SlowerPreset | None:
        """The latest finding of any preset."""
        return self.put_back[0] if self.put_back else None


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


def array_eta(snapshot: Snapshot, name: str, now: float) -> ArrayForecast:
    """The forecast of the array's running operation with "what if I boost", both as the
    sampler's last tick (or a write since) left them: nothing is derived again per request."""
    state = snapshot.array(name)
    run = state.run if state is not None else None
    if state is None or run is None:
        idle = model.Forecast("insufficient", "no operation is running on this array")
        return _view(name, None, idle, None, now)
    fc = state.forecast or model.Forecast("insufficient", "no samples of this run yet")
    view = _view(name, run, fc, state.boost, now)
    # Set only here (the route leaves unset fields out): an idle array's answer has no such key.
    view.boost_active = snapshot.session_id is not None
    return view


def diagnosis(snapshot: Snapshot, name: str) -> Diagnosis | None:
    """The array's verdicts as of the last tick, their advice already judged beside the boost
    estimate offered with them: what the page, the API and a push say of why a sync is slow."""
    state = snapshot.array(name)
    return state.diagnosis if state is not None else None


@dataclasses.dataclass(frozen=True)
class BoostEvidence:
    """What this box knows of boost's gain for one syncing array, as a tick read it: a measured
    ratio and where it was measured, or else the physics' inputs. The estimate is made from it
    without SQL, so a revert between two ticks offers it at once."""

    ratio: float | None = None  # speed with boost / without, measured on this box
    measured_on: str = "this array"  # where `ratio` was measured, in words
    disks: tuple[str, float] | None = None  # the array's last check or resync: action, KiB/s
    cpu_bound: tuple[str, float] | None = None  # md's thread near a full core, and its cores
    tuned_only: MeasuredEffect | None = None  # boost measured here only over settings tuned


def boost_evidence(
    conn: db.Connection, name: str, siblings: Iterable[str], found: Diagnosis | None
) -> BoostEvidence:
    """From this box's own measurements once it has them: this array's measured boost; else
    another array's of the same SHR pool (`siblings`), which sits on the same disks (md2's x5
    says more about md3 than any model); else a boost mdboost put back here for making a sync
    slower; else boost measured over the untuned pace of any array of this box. Without any,
    the physics: the limits, md's thread near a full core (the tick's diagnosis, `found`), or
    the clean bench of this kernel (boost.py). Read once a tick, whatever is tuned: a revert
    offers the estimate again before the next tick."""
    ratio = effects.latest_ratio(conn, BOOST_PRESET, name)
    if ratio is not None:
        return BoostEvidence(ratio)
    for sibling in siblings:
        ratio = effects.latest_ratio(conn, BOOST_PRESET, sibling)
        if ratio is not None:
            return BoostEvidence(ratio, f"{sibling}, on the same disks")
    slower_here = slower.latest(conn, BOOST_PRESET)
    if slower_here is not None:
        on = f"{slower_here.array} of this box, where mdboost put it back"
        return BoostEvidence(slower_here.ratio, on)
    elsewhere = effects.latest_measured(conn, BOOST_PRESET)
    if elsewhere is not None and elsewhere.untuned:
        return BoostEvidence(elsewhere.ratio, f"{elsewhere.array} of this box")
    return BoostEvidence(
        disks=history.last_sync_pace(conn, name), cpu_bound=_cpu_bound(found), tuned_only=elsewhere
    )


def boost_estimate(
    fc: model.Forecast,
    evidence: BoostEvidence,
    preset: str | None,
    untuned: float | None,
    boost_max: float | None,
    kernel_release: str | None,
) -> boost.BoostEstimate | None:
    """The finish if boost were applied now, while no preset is applied (`preset` None) or
    another preset holds the run; None while boost is on. Boost's gains were measured over the
    untuned pace, so under another preset they scale that pace (`untuned`, KiB/s before it),
    never the tuned one; without it there is nothing to scale. `boost_max`: the max limit the
    boost preset writes (KiB/s)."""
    if preset == BOOST_PRESET or (preset is not None and not untuned):
        return None
    if fc.settling and fc.regime == "revert" and fc.reason != model.REVERT_REASON:
        # The pace before tuning is not known (tuned before it was measured): nothing to scale.
        return None
    if evidence.ratio is not None:
        on = evidence.measured_on
        return boost.boost_forecast(fc, evidence.ratio, measured_on=on, untuned_speed=untuned)
    found = boost.boost_forecast(
        fc,
        None,
        boost_max,
        untuned_speed=untuned,
        disks=evidence.disks,
        kernel_release=kernel_release,
        cpu_bound=evidence.cpu_bound,
    )
    if found is None or evidence.tuned_only is None:
        return found
    # Boost was measured on this box, but only over settings already tuned, which says nothing
    # of its gain over the untuned pace: say so, never "boost has not been measured".
    measured = f"×{evidence.tuned_only.ratio:.1f} on {evidence.tuned_only.array}"
    note = f"boost measured {measured} over settings already tuned, not over the untuned pace"
    return dataclasses.replace(found, why=f"{found.why}; {note}")


def offered_gain(estimate: boost.BoostEstimate | None) -> float | None:
    """The gain boost's estimate offers: its ratio, 1.0 when boost would not help, None when no
    estimate is offered (boost is on, or nothing runs)."""
    if estimate is None:
        return None
    return estimate.ratio if estimate.helps else 1.0


def _cpu_bound(found: Diagnosis | None) -> tuple[str, float] | None:
    """The md thread near a full core, with its cores, when the tick's diagnosis shows it."""
    for verdict in found.verdicts if found is not None else ():
        if verdict.verdict == "cpu_bound" and not verdict.fading:
            return str(verdict.numbers["thread"]), float(verdict.numbers["cores"])
    return None


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
