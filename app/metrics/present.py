"""Present: after each sampler tick, the box as /metrics renders it, so a scrape reads no kernel
file and re-reads no run. Until the sampler keeps its own per-array snapshot (issue 12), this
follows the tick: the mdstat and sysfs it read, each open run's forecast kept up incrementally
(rebuilt once from SQLite, then one sample per tick), the pool, and the tuning session's knobs.
"""

import sqlite3
from typing import Any

from app.forecast import model, physics, pool, service
from app.kernel.host import ArraySysfs, Host
from app.kernel.mdstat import Array
from app.live.sampler import Tick
from app.metrics.exposition import effective_limit
from app.metrics.view import ArrayNow, BoxNow, KnobNow, MemberIO
from app.store import history
from app.tuning import journal, session


class Present:
    """Holds the latest BoxNow; update() runs in the sampler's thread, requests read `box`."""

    def __init__(self, host: Host, conn: sqlite3.Connection) -> None:
        self.host = host
        self.conn = conn
        self.box = BoxNow()
        self.progress: dict[int, model.RunProgress] = {}  # open run id -> its progress so far

    def update(self, tick: Tick) -> None:
        if tick.parsed is None or tick.ts is None:
            return  # mdstat unreadable: keep the last picture; its timestamp tells it is old
        forecasts: dict[str, model.Forecast] = {}
        progress: dict[int, model.RunProgress] = {}
        for array in tick.parsed.arrays:
            run = history.open_run(self.conn, array.name) if array.sync is not None else None
            if run is None or array.sync is None or not array.sync.running:
                continue
            sysfs = tick.sysfs.get(array.name)
            knee = (
                physics.grow_knee(array.level, sysfs.raid_disks)
                if run["action"] == "reshape" and sysfs is not None
                else None
            )
            run_progress = self.progress.get(run["id"]) or service.rebuild(
                self.conn, run["id"], knee
            )
            self._add(run_progress, run["id"], array, sysfs, tick)
            progress[run["id"]] = run_progress
            forecasts[array.name] = run_progress.forecast()
        self.progress = progress  # runs that ended are forgotten

        def forecast_of(array: Array, run: dict[str, Any] | None) -> model.Forecast:
            return forecasts.get(array.name) or model.Forecast("insufficient", "no run yet")

        members = service.pool_members(self.conn, tick.parsed, forecast_of)
        open_session = journal.open_session(self.conn)
        knobs = session.knob_states(self.host, self.conn, open_session) if open_session else []
        self.box = BoxNow(
            arrays=tuple(
                ArrayNow(a, tick.sysfs.get(a.name), forecasts.get(a.name), _members(tick, a.name))
                for a in tick.parsed.arrays
            ),
            speed_limit_min_kb_s=tick.global_limits[0],
            speed_limit_max_kb_s=tick.global_limits[1],
            last_success=tick.ts if tick.error is None else self.box.last_success,
            pool=pool.pool_forecast(members) if len(members) > 1 else None,
            preset=open_session["preset"] if open_session else None,
            session_started=open_session["started"] if open_session else None,
            knobs=tuple(
                KnobNow(k["knob"], k["target"], k["unit"], k["desired"], k["current"], k["drift"])
                for k in knobs
            ),
        )

    def _add(
        self,
        progress: model.RunProgress,
        run_id: int,
        array: Array,
        sysfs: ArraySysfs | None,
        tick: Tick,
    ) -> None:
        """This tick's sample, with the limits and the tuning event the sampler stored with it
        (service.rebuild() reads the same from SQLite); add() skips a sample it already has."""
        sync = array.sync
        if sync is None or tick.ts is None:
            return
        since = progress.last.ts if progress.last is not None else 0.0
        kinds = [
            e["kind"]
            for e in history.events(self.conn, run_id)
            if since < e["ts"] <= tick.ts and e["kind"] not in model.REPORT_EVENTS
        ]
        global_min, global_max = tick.global_limits
        low = effective_limit(sysfs.sync_speed_min if sysfs else None, global_min)
        high = effective_limit(sysfs.sync_speed_max if sysfs else None, global_max)
        limits = physics.Limits(
            low.kb_s if low else None,
            high.kb_s if high else None,
            sysfs.stripe_cache_size if sysfs else None,
        )
        event = kinds[-1] if kinds else None
        progress.add(tick.ts, sync.done_blocks, sync.total_blocks, limits, event)


def _members(tick: Tick, array: str) -> tuple[MemberIO, ...]:
    """Each member's busy share and wait over the diagnosis window (running arrays only)."""
    diagnosis = tick.diagnoses.get(array)
    if diagnosis is None:
        return ()
    return tuple(
        MemberIO(m["member"], m["busy"], m["wait_ms"] / 1000)
        for m in diagnosis.readings["members"]
        if m["wait_ms"] is not None
    )
