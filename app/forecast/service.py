"""Gather what the forecast needs (samples, tuning events, the grow's knee, measured boosts) from
SQLite and the kernel, and shape the answer for the API: one array, or the whole SHR pool."""

import sqlite3
from collections.abc import Callable
from typing import Any

from app.forecast import boost, model, physics, pool
from app.kernel import mdstat
from app.kernel.host import ARRAY_NAME, Host
from app.live import arrays
from app.store import history
from app.tuning import effects

BOOST_PRESET = "boost"
# An SHR pool's arrays reshape one after another: a run that completed this long before the
# next one started still belongs to the same expansion.
POOL_CHAIN_S = 3600.0


def rebuild(conn: sqlite3.Connection, run_id: int, knee: float | None) -> model.RunProgress:
    """A run's RunProgress from its stored samples and events: once, when mdboost (re)starts."""
    progress = model.RunProgress(knee)
    pending = [
        (e["ts"], e["kind"])
        for e in history.events(conn, run_id)
        if e["kind"] not in model.REPORT_EVENTS
    ]
    for ts, done, total, speed_min, speed_max, stripe_cache in history.run_samples(conn, run_id):
        kind = None
        while pending and pending[0][0] <= ts:
            kind = pending.pop(0)[1]
        limits = physics.Limits(speed_min, speed_max, stripe_cache)
        progress.add(ts, done, total, limits, kind)
    return progress


def run_forecast(
    conn: sqlite3.Connection, run: dict[str, Any], knee: float | None
) -> model.Forecast:
    return rebuild(conn, run["id"], knee).forecast()


def knee_of(array: mdstat.Array | None, host: Host, action: str | None) -> float | None:
    """The knee of a running RAID5/6 grow, from level and sysfs raid_disks "new (old)"."""
    if array is None or action != "reshape" or not ARRAY_NAME.fullmatch(array.name):
        return None
    return physics.grow_knee(array.level, host.read_array_sysfs(array.name).raid_disks)


def array_eta(conn: sqlite3.Connection, host: Host, name: str, now: float) -> dict[str, Any]:
    """The forecast of the array's running operation, with "what if I boost"."""
    run = history.open_run(conn, name)
    if run is None:
        idle = model.Forecast("insufficient", "no operation is running on this array")
        return _view(name, None, idle, None, now)
    array = arrays.current(host).array(name)
    fc = run_forecast(conn, run, knee_of(array, host, run["action"]))
    boosted = _boosted(conn, run["id"])
    estimate = (
        None
        if boosted
        else boost.boost_forecast(fc, effects.latest_ratio(conn, BOOST_PRESET, name))
    )
    view = _view(name, run, fc, estimate, now)
    view["boost_active"] = boosted
    return view


def pool_eta(conn: sqlite3.Connection, host: Host, now: float) -> dict[str, Any]:
    """The SHR pool as one job: arrays done, the one reshaping, those queued (resync=DELAYED)."""
    forecasts: dict[str, model.Forecast] = {}

    def forecast_of(array: mdstat.Array, run: dict[str, Any] | None) -> model.Forecast:
        fc = (
            run_forecast(conn, run, knee_of(array, host, run["action"]))
            if run is not None
            else model.Forecast("insufficient", "no samples of this run yet")
        )
        forecasts[array.name] = fc
        return fc

    members = pool_members(conn, arrays.current(host), forecast_of)
    job = pool.pool_forecast(members)
    return {
        "now": now,
        "pool": job.to_json(),
        "eta_in_s": job.eta - now if job.eta is not None else None,
        "arrays": [
            {"name": m.name, "state": m.state, "forecast": _json(forecasts.get(m.name))}
            for m in members
        ],
    }


def pool_members(
    conn: sqlite3.Connection,
    current: mdstat.MdStat,
    forecast_of: Callable[[mdstat.Array, dict[str, Any] | None], model.Forecast],
) -> list[pool.PoolMember]:
    """The data arrays in pool order: done (recently, this expansion), running, queued.

    `forecast_of(array, open run)` gives each running array's forecast."""
    data = [a for a in current.arrays if arrays.role_of(a) == "data"]
    running = [a for a in data if a.sync is not None and a.sync.running]
    queued = [a for a in data if a.sync is not None and not a.sync.running]
    open_runs = {a.name: history.open_run(conn, a.name) for a in running}
    starts = [r["started"] for r in open_runs.values() if r is not None]
    done = []
    if starts:
        for array in data:
            if array in running or array in queued:
                continue
            last = history.last_run(conn, array.name)
            if (
                last is not None
                and last["outcome"] == "completed"
                and last["finished"] >= min(starts) - POOL_CHAIN_S
            ):
                done.append((last["finished"], array))
    members = [pool.PoolMember(a.name, "done", a.blocks) for _, a in sorted(done)]
    for array in running:
        fc = forecast_of(array, open_runs[array.name])
        members.append(pool.PoolMember(array.name, "running", array.blocks, fc))
    return members + [pool.PoolMember(a.name, "queued", a.blocks) for a in queued]


def _boosted(conn: sqlite3.Connection, run_id: int) -> bool:
    """Whether the latest apply/revert on this run left a preset applied."""
    kinds = [e["kind"] for e in history.events(conn, run_id) if e["kind"] in ("apply", "revert")]
    return bool(kinds) and kinds[-1] == "apply"


def _view(
    name: str,
    run: dict[str, Any] | None,
    fc: model.Forecast,
    boost: boost.BoostEstimate | None,
    now: float,
) -> dict[str, Any]:
    return {
        "array": name,
        "run_id": run["id"] if run else None,
        "action": run["action"] if run else None,
        "now": now,
        "forecast": fc.to_json(),
        "eta_in_s": fc.eta - now if fc.eta is not None else None,
        "boost": boost.to_json() if boost is not None else None,
    }


def _json(fc: model.Forecast | None) -> dict[str, Any] | None:
    return fc.to_json() if fc is not None else None
