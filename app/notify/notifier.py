"""The sampler's notification hook: observe the tick, detect events, queue them in the outbox.

It only writes rows (the delivery task sends them), so it never waits on a receiver. Its events
and the detector's new state are saved in one transaction: when that fails (disk full, database
locked) nothing is queued and the state stays as it was, so the next tick detects them again.
"""

import json
import logging
import time
from collections.abc import Callable

from app.config import Settings
from app.kernel.host import Host
from app.live import array_view, forecasts
from app.live.snapshot import Snapshot
from app.live.snapshot_builder import SnapshotBuilder
from app.live.tick import Tick
from app.md import mdstat
from app.notify import destinations, events, messages, observation, outbox
from app.notify.senders import Message
from app.records import LastSample
from app.store import db, history, journal
from app.store import notify as stored

log = logging.getLogger(__name__)

NO_SAMPLE = LastSample(None, None, None, None, None, None, None)
# A disk that fills, empties a little and fills again is said once in this long.
DISK_FULL_SAID_EVERY_S = 6 * 3600.0


def rules_from(settings: Settings) -> observation.EventRules:
    return observation.EventRules(
        milestone_percent=settings.notify_milestone_percent,
        stall_s=settings.notify_stall_minutes * 60,
        mismatch_threshold=settings.notify_mismatch_threshold,
        sampler_failures=settings.notify_sampler_failures,
    )


class Notifier:
    """Holds the detector's last state; `on_tick` runs on the sampler's thread after each tick."""

    def __init__(
        self,
        conn: db.Connection,
        host: Host,
        clock: Callable[[], float],
        settings: Settings,
        wall_clock: Callable[[], float] = time.time,
        snapshot_builder: SnapshotBuilder | None = None,
    ) -> None:
        self.conn = conn
        self.host = host
        # The ETAs in messages come from the sampler's present; without one (a notifier on its
        # own), it keeps its own, brought up to date with each tick.
        self.own_snapshot_builder = snapshot_builder is None
        self.snapshot_builder = (
            snapshot_builder if snapshot_builder is not None else SnapshotBuilder(host, conn)
        )
        self.clock = clock
        self.wall_clock = wall_clock
        self.rules = rules_from(settings)
        self.public_url = settings.public_url
        self.fallback_url = settings.page_url  # http://<hostname>:8080/
        saved = stored.detector_state(conn)
        self.state: observation.State | None = json.loads(saved) if saved else None
        self.on_queued: Callable[[], object] | None = None  # the delivery task's wake()
        # The delivery task's send_directly(): for what the outbox cannot hold (a full disk).
        self.send_directly: Callable[[Message], object] | None = None
        self.disk_full_said: float | None = None  # wall time the full disk was last said

    @classmethod
    def open(
        cls,
        host: Host,
        clock: Callable[[], float],
        settings: Settings,
        snapshot_builder: SnapshotBuilder | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> "Notifier":
        """A notifier with its own connection; MDBOOST_NOTIFY's URLs become 'env' destinations."""
        conn = db.connect(settings.db)
        urls = destinations.split_urls(
            settings.notify.get_secret_value() if settings.notify else ""
        )
        for problem in destinations.sync_env(conn, urls, clock()):
            log.error("notify: %s", problem)
        return cls(conn, host, clock, settings, wall_clock, snapshot_builder)

    def on_tick(self, tick: Tick) -> list[Message]:
        """Queue the events of this tick; a failure is logged and retried with the next tick."""
        if self.own_snapshot_builder:
            self.snapshot_builder.update(tick)
        if tick.clock_step and self.state is not None:
            self.state = events.shifted(self.state, tick.clock_step)
        try:
            obs = self.observe(tick)
            state, found = events.detect(self.state, obs, self.rules)
            composed = [self._compose(event, obs.now) for event in found]
            if not composed and state == self.state:
                return []  # nothing new to queue or remember: an idle tick writes nothing
            targets: list[int] = []
            if not composed:
                # The detector's memory alone (progress moved): one upsert, a transaction of
                # its own, where the destinations were read and a transaction opened each tick.
                stored.save_detector_state(self.conn, json.dumps(state))
            else:
                with db.write_transaction(self.conn):
                    targets = stored.active_destination_ids(self.conn)
                    for message in composed:
                        outbox.enqueue(self.conn, message, targets, obs.now, self.wall_clock())
                    stored.save_detector_state(self.conn, json.dumps(state))
        except db.Error as error:
            log.warning("notify: cannot queue this tick's events, next tick retries: %s", error)
            return []
        self.state = state
        for message in composed:
            log.info("notify: queued %s for %d destination(s)", message.key, len(targets))
        if composed and targets and self.on_queued is not None:
            self.on_queued()
        return composed

    def announce(self, message: Message) -> None:
        """Queue one message of mdboost's own state for every destination; when the outbox
        cannot take it (it lives in the database, and the disk may be full) it goes straight
        to the delivery task, held in memory and tried until sent, so that the owner learns
        of a full disk while it is full, not once there is room."""
        try:
            with db.write_transaction(self.conn):
                targets = stored.active_destination_ids(self.conn)
                now = self.clock()
                outbox.enqueue(self.conn, message, targets, now, self.wall_clock())
        except db.Error as error:
            log.warning(
                "notify: %s sent directly, the outbox cannot take it: %s", message.key, error
            )
            if self.send_directly is not None:
                self.send_directly(message)
            return
        log.info("notify: queued %s for %d destination(s)", message.key, len(targets))
        if targets and self.on_queued is not None:
            self.on_queued()

    def note_disk(self, full: bool) -> None:
        """After each tick: say a full disk once (again only after DISK_FULL_SAID_EVERY_S),
        not once a tick."""
        now = self.wall_clock()
        if not full:
            return
        said = self.disk_full_said
        if said is not None and now - said < DISK_FULL_SAID_EVERY_S:
            return
        self.disk_full_said = now
        self.announce(messages.disk_full_message(self.page_url, f"disk_full:{int(now)}"))

    def originals_lost(self, why: str, knobs: int) -> None:
        """Start-up put md's defaults back: the true originals could not be found."""
        key = f"originals_lost:{int(self.wall_clock())}"
        self.announce(messages.originals_lost_message(self.page_url, key, why, knobs))

    def observe(self, tick: Tick) -> observation.TickFacts:
        # The tick's own time, not the clock's now: the runs it ended carry that time, and a late
        # hook (a busy box, or the demo's sped-up clock) must not make md2's end and md3's start
        # in the same tick look an hour apart and split one SHR expansion into two.
        now = tick.ts if tick.ts is not None else self.clock()
        if tick.parsed is None or tick.error is not None:
            return observation.TickFacts(now, None, tick.error or "no data")
        conn = self.conn
        snapshot = self.snapshot_builder.snapshot
        arrays = tick.parsed.arrays
        last = history.last_samples(conn, [array.name for array in arrays])
        seen = [
            _array_now(last.get(array.name, NO_SAMPLE), array, tick, snapshot) for array in arrays
        ]
        open_ids = {a.run_id for a in seen if a.run_id is not None}
        before = (self.state or {}).get("arrays", {})
        gone = [m["run_id"] for m in before.values() if m.get("run_id") not in (None, *open_ids)]
        ended = {}
        for run_id in gone:
            run = history.finished_run(conn, run_id)
            if run is not None and run.finished is not None:  # finished_run's promise
                outcome = run.outcome or ""  # the sampler sets one as it ends a run
                ended[run_id] = observation.RunEnd(
                    run.id, run.array, run.action, outcome, run.started, run.finished
                )
        # The present (this tick's, or a write's since) says whether a session is open; its
        # arrays are read only then.
        session = journal.open_session(conn) if snapshot.session_id is not None else None
        boost = (session.id, tuple(session.arrays)) if session else None
        needed = session is not None and snapshot.job.goes_on_for(session.arrays)
        drift_seen = (self.state or {}).get("drift_seen", 0)
        # The newest event first, and then only the events up to it: most ticks add none, and
        # one added meanwhile waits for the next tick rather than falling behind drift_seen.
        last_event = history.last_event_id(conn)
        new = (
            history.events_between_ids(conn, ("drift", "slower"), drift_seen, last_event)
            if last_event > drift_seen
            else []
        )
        drift = tuple(
            observation.Drift(
                e.id,
                e.array,
                e.detail.get("key", "?"),
                e.detail.get("desired"),
                e.detail.get("current"),
            )
            for e in new
            if e.kind == "drift"
        )
        slower = tuple(
            observation.Slower(
                e.id, e.array, e.detail.get("preset", "?"), e.detail.get("sentence", "")
            )
            for e in new
            if e.kind == "slower"
        )
        return observation.TickFacts(
            now, tuple(seen), None, ended, boost, drift, slower, last_event, needed
        )

    @property
    def page_url(self) -> str:
        """The link in messages: MDBOOST_PUBLIC_URL; else the address the owner opened the page
        at when setting up notifications; else http://<hostname>:8080/, which a phone on the
        LAN often cannot resolve."""
        return self.public_url or stored.owner_page(self.conn) or self.fallback_url

    def _compose(self, event: observation.Event, now: float) -> Message:
        ctx = messages.Context(self.page_url, self._eta(now), self._pool(now))
        try:
            return messages.compose(event, ctx)
        except Exception:
            # A forecast that cannot be computed must not cost the owner the message itself.
            log.exception("notify: composing %s with its ETA failed; sending it without", event.key)
            no_eta = messages.Context(self.page_url, lambda name: None, lambda: None)
            return messages.compose(event, no_eta)

    def _eta(self, now: float) -> messages.EtaLookup:
        def lookup(name: str) -> forecasts.ArrayForecast | None:
            view = forecasts.array_eta(self.snapshot_builder.snapshot, name, now)
            return view if view.run_id is not None else None

        return lookup

    def _pool(self, now: float) -> messages.PoolLookup:
        return lambda: forecasts.pool_eta(self.snapshot_builder.snapshot, now)


def _array_now(
    sample: LastSample, array: mdstat.Array, tick: Tick, snapshot: Snapshot
) -> observation.ArrayFacts:
    """The array as mdstat shows it this tick, beside its newest stored `sample`."""
    missing = sample.degraded if sample.degraded is not None else array.missing
    return observation.ArrayFacts(
        name=array.name,
        state=array.state,
        level=array.level,
        role=array_view.role_of(array),
        status=array.status,
        degraded=int(missing),
        devices={d.name: d.flags for d in array.devices},
        run_id=sample.run_id,
        action=sample.action,
        done_blocks=sample.done_blocks,
        total_blocks=sample.total_blocks,
        percent=sample.percent,
        mismatch_cnt=sample.mismatch_cnt,
        queued=array.queued,
        verdict=_verdict(snapshot, array.name),
        failed=array.name in tick.failed(),
    )


def _verdict(snapshot: Snapshot, array: str) -> tuple[str, float, str] | None:
    """The array's primary verdict as the page says it (its advice beside boost's estimate)."""
    diagnosis = forecasts.diagnosis(snapshot, array)
    primary = diagnosis.primary if diagnosis is not None else None
    return (primary.verdict, primary.since, primary.sentence) if primary is not None else None
