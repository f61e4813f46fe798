"""Present: after each sampler tick, the box as /metrics renders it, so a scrape reads no kernel
file and re-reads no run. Until the sampler keeps its own per-array snapshot (issue 12), this
follows the tick: the mdstat and sysfs it read, each open run's forecast kept up incrementally
(seeded once from SQLite, then one sample per tick), the pool, and the tuning session's knobs.
"""

import sqlite3
from typing import Any

from app.forecast import model, service
from app.kernel.host import Host
from app.kernel.mdstat import Array
from app.live.sampler import Tick
from app.metrics.view import ArrayNow, BoxNow, KnobNow
from app.store import history
from app.tuning import journal, session


class Present:
    """Holds the latest BoxNow; update() runs in the sampler's thread, requests read `box`."""

    def __init__(self, host: Host, conn: sqlite3.Connection) -> None:
        self.host = host
        self.conn = conn
        self.box = BoxNow()
        self.progress: dict[int, model.RunProgress] = {}  # open run id -> its samples so far

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
                model.grow_knee(array.level, sysfs.raid_disks)
                if run["action"] == "reshape" and sysfs is not None
                else None
            )
            progress[run["id"]] = self._progress(run["id"], array, tick.ts)
            events = service.run_events(self.conn, run["id"])
            forecasts[array.name] = progress[run["id"]].forecast(events, knee)
        self.progress = progress  # runs that ended are forgotten

        def forecast_of(array: Array, run: dict[str, Any] | None) -> model.Forecast:
            return forecasts.get(array.name) or model.Forecast("insufficient", "no run yet")

        members = service.pool_members(self.conn, tick.parsed, forecast_of)
        open_session = journal.open_session(self.conn)
        self.box = BoxNow(
            arrays=tuple(
                ArrayNow(a, tick.sysfs.get(a.name), forecasts.get(a.name))
                for a in tick.parsed.arrays
            ),
            speed_limit_min_kb_s=tick.global_limits[0],
            speed_limit_max_kb_s=tick.global_limits[1],
            last_success=tick.ts if tick.error is None else self.box.last_success,
            pool=model.pool_forecast(members) if len(members) > 1 else None,
            preset=open_session["preset"] if open_session else None,
            session_started=open_session["started"] if open_session else None,
            knobs=tuple(
                KnobNow(
                    knob=k["knob"],
                    target=k["target"],
                    unit=k["unit"],
                    desired=k["desired"],
                    current=k["current"],
                    drift=k["drift"],
                )
                for k in (
                    session.knob_states(self.host, self.conn, open_session) if open_session else []
                )
            ),
        )

    def _progress(self, run_id: int, array: Array, ts: float) -> model.RunProgress:
        """The run's progress: all its stored samples the first time, then this tick's."""
        progress = self.progress.get(run_id)
        if progress is None:
            progress = model.RunProgress()
            for sample in history.run_samples(self.conn, run_id):
                progress.add(*sample)
        if array.sync is not None:
            # Already stored when this tick's write succeeded: add() skips a ts it has seen.
            progress.add(ts, array.sync.done_blocks, array.sync.total_blocks)
        return progress
