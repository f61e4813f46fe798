"""Apply and revert presets: plan, journal the originals, write, read back, roll back on failure.

One apply or revert at a time (Busy otherwise). Originals are taken once per session, so a second
preset over the first still reverts to what mdboost found. At start-up `reconcile()` decides, from
the journal and the kernel, whether an open session resumes or is reverted, and logs why.
"""

import json
import logging
import os
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from app import arrays, db, effects, history, journal, mdstat, presets
from app.config import Settings
from app.host import Host
from app.planning import Change, Plan, PlanError, make_plan
from app.presets import Preset, PresetError
from app.tunables import CATALOGUE, SYSTEM, md_floor

log = logging.getLogger(__name__)


LOCK_WAIT_S = 30.0


class Busy(Exception):
    """Another apply or revert is running."""


class UnknownPreset(LookupError):
    pass


@dataclass
class TuningFailed(Exception):
    """A kernel write or read-back failed; what this operation wrote was put back."""

    message: str
    knob: str | None = None
    target: str | None = None
    value: str | None = None
    kernel: str | None = None
    rolled_back: list[str] = field(default_factory=list)
    rollback_errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            **{k: v for k, v in self.__dict__.items() if k != "message"},
        }


def write_order(changes: list[Change]) -> list[Change]:
    """Raise maxima first and lower them last, so min <= max holds after every single write."""

    def rank(change: Change) -> int:
        if not change.knob.endswith("_max"):
            return 1
        rising = change.from_value == SYSTEM or (
            change.to_value != SYSTEM and int(change.to_value) >= int(change.from_value)
        )
        return 0 if rising else 2

    return sorted(changes, key=rank)


class Tuner:
    """The only writer of kernel knobs. Shared by the API, the sampler hook and the lifespan."""

    def __init__(
        self,
        host: Host,
        conn: sqlite3.Connection,
        clock: Callable[[], float],
        settings: Settings,
        presets: dict[str, Preset],
        preset_errors: list[PresetError],
    ) -> None:
        self.host = host
        self.conn = conn
        self.clock = clock
        self.settings = settings
        self.presets = presets
        self.preset_errors = preset_errors
        # `operation` is held for a whole apply or revert: a second one gets Busy (409).
        # `lock` guards the connection and the knobs; the sampler's hook takes it for a moment
        # each tick, so an apply waits for it rather than failing (seen in CI as a stray 409).
        self.operation = threading.Lock()
        self.lock = threading.Lock()
        self.drift_seen: set[tuple[int, str, str]] = set()

    @classmethod
    def open(cls, host: Host, clock: Callable[[], float], settings: Settings) -> "Tuner":
        """A tuner with its own database connection and the presets from disk."""
        found, errors = presets.load_all(settings.presets_dir, settings.data_dir)
        return cls(host, db.connect(settings.db), clock, settings, found, errors)

    # ---- planning
    def preset(self, name: str) -> Preset:
        preset = self.presets.get(name)
        if preset is None:
            raise UnknownPreset(f"no preset named {name[:40]!r} (known: {', '.join(self.presets)})")
        return preset

    def plan(self, name: str, array_names: list[str] | None = None) -> Plan:
        preset = self.preset(name)
        if preset.restore_originals:
            raise PlanError(f"{name} puts back the originals: use revert")
        return make_plan(
            preset, self.host, arrays.current(self.host), array_names, self.settings.max_cache_mb
        )

    # ---- apply
    def apply(self, name: str, array_names: list[str] | None = None) -> dict[str, Any]:
        if self.preset(name).restore_originals:
            return self.revert(f"{name} preset")
        with self._exclusive(wait=False):
            return self._apply(name, array_names)

    def _apply(self, name: str, array_names: list[str] | None) -> dict[str, Any]:
        plan = self.plan(name, array_names)
        changes = write_order(list(plan.changes))
        if not changes:
            return {"ok": True, "op_id": None, "plan": plan.to_json(), "applied": []}
        now = self.clock()
        session_id, op_id = journal.begin_apply(self.conn, name, list(plan.arrays), changes, now)
        self._crash_point("after_journal")
        written: list[Change] = []
        try:
            for change in changes:
                self._write(change, change.to_value)
                written.append(change)
                if len(written) == 1:
                    self._crash_point("mid_write")
            self._crash_point("after_write")
            for change in changes:
                self._verify(change, change.to_value)
        except TuningFailed as failure:
            self._roll_back(written, failure)
            journal.abandon_apply(self.conn, session_id, op_id, failure.message, self.clock())
            log.error("apply %s failed and was rolled back: %s", name, failure.message)
            raise
        journal.finish_apply(
            self.conn, session_id, op_id, name, list(plan.arrays), changes, self.clock()
        )
        log.info("applied %s to %s: %d knobs", name, ", ".join(plan.arrays), len(changes))
        return {
            "ok": True,
            "op_id": op_id,
            "plan": plan.to_json(),
            "applied": [c.key for c in changes],
        }

    def _write(self, change: Change, value: str) -> None:
        knob = CATALOGUE[change.knob]
        text = knob.validate(value)  # last line of defence: never write outside the catalogue
        try:
            self.host.write(self.host.knob_path(knob.path, change.target), text)
        except OSError as error:
            where = f" on {change.target}" if change.target else ""
            raise TuningFailed(
                f"the kernel refused {change.knob}={text}{where}: {error.strerror or error}",
                knob=change.knob,
                target=change.target,
                value=text,
                kernel=error.strerror or str(error),
            ) from None

    def _verify(self, change: Change, value: str) -> None:
        knob = CATALOGUE[change.knob]
        raw = self.host.read(self.host.knob_path(knob.path, change.target))
        seen = knob.normalise(raw) if raw is not None else None
        if seen != value:
            raise TuningFailed(
                f"{change.knob} on {change.target or 'the system'} reads back {seen!r}, "
                f"not {value!r}",
                knob=change.knob,
                target=change.target,
                value=value,
                kernel=f"read back {seen!r}",
            )

    def _roll_back(self, written: list[Change], failure: TuningFailed) -> None:
        for change in reversed(written):
            try:
                self._write(change, change.from_value)
                failure.rolled_back.append(change.key)
            except TuningFailed as error:
                failure.rollback_errors.append(error.message)

    # ---- revert
    def revert(self, reason: str = "requested", wait: bool = False) -> dict[str, Any]:
        with self._exclusive(wait):
            return self._revert(reason)

    @contextmanager
    def _exclusive(self, wait: bool) -> Iterator[None]:
        """One apply or revert at a time (Busy otherwise), then the knobs to itself."""
        if not self.operation.acquire(blocking=wait, timeout=LOCK_WAIT_S if wait else -1):
            raise Busy("another apply or revert is running")
        try:
            if not self.lock.acquire(timeout=LOCK_WAIT_S):
                raise Busy("the sampler's tuning check did not finish in time")
            try:
                yield
            finally:
                self.lock.release()
        finally:
            self.operation.release()

    def _revert(self, reason: str) -> dict[str, Any]:
        session = journal.open_session(self.conn)
        if session is None:
            return {"ok": True, "restored": [], "detail": "nothing to revert"}
        now = self.clock()
        op_id = journal.begin_revert(self.conn, session["id"], reason, now)
        knobs = journal.session_knobs(self.conn, session["id"])
        md = arrays.current(self.host)
        steps = []
        for row in knobs:
            knob = CATALOGUE[row["knob"]]
            raw = self.host.read(self.host.knob_path(knob.path, row["target"]))
            current = knob.normalise(raw) if raw is not None else row["desired"]
            target = self._revert_target(row, md)
            steps.append(
                Change(row["key"], row["knob"], row["target"], knob.unit, current, target, "")
            )
        restored: list[dict[str, Any]] = []
        errors: list[str] = []
        for change in write_order(steps):
            try:
                if change.from_value != change.to_value:
                    self._write(change, change.to_value)
                self._verify(change, change.to_value)
                restored.append(
                    {"key": change.key, "from": change.from_value, "to": change.to_value}
                )
            except TuningFailed as failure:
                errors.append(failure.message)
        journal.finish_revert(
            self.conn, session["id"], op_id, reason, restored, errors, self.clock()
        )
        if errors:
            log.error(
                "revert (%s) incomplete; the session stays open: %s", reason, "; ".join(errors)
            )
            raise TuningFailed("revert incomplete: " + "; ".join(errors), rollback_errors=errors)
        log.info("reverted %d knobs to their originals (%s)", len(restored), reason)
        return {"ok": True, "op_id": op_id, "restored": restored, "reason": reason}

    def _revert_target(self, row: sqlite3.Row, md: mdstat.MdStat) -> str:
        """The journaled original, unless md itself needs more now (new geometry, a reshape)."""
        original: str = row["original"]
        array = md.array(row["target"]) if row["target"] else None
        if array is None or not original.isdigit():
            return original
        reshaping = array.sync is not None and array.sync.action == "reshape"
        floor = md_floor(row["knob"], array.level, array.chunk_kb, array.raid_disks, reshaping)
        if floor is None or floor <= int(original):
            return original
        log.info(
            "%s: keeping %d, not the original %s: md needs at least that on %s now",
            row["key"],
            floor,
            original,
            array.name,
        )
        return CATALOGUE[row["knob"]].validate(floor)

    # ---- start-up, ticks, shutdown
    def reconcile(self) -> str | None:
        """Resume or revert a session left open by a stop or crash; returns what it did."""
        session = journal.open_session(self.conn)
        if session is None:
            return None
        why = self._revert_reason(session, at_start=True)
        if why is None:
            log.info(
                "resuming tuning session %s (%s): its arrays are still syncing",
                session["id"],
                session["preset"],
            )
            return "resumed"
        log.warning("reverting tuning session %s at start-up: %s", session["id"], why)
        try:
            self.revert(why, wait=True)
        except TuningFailed:
            return "revert failed"
        return "reverted"

    def _revert_reason(self, session: sqlite3.Row, at_start: bool = False) -> str | None:
        if at_start and journal.unfinished_ops(self.conn):
            return "mdboost stopped in the middle of an apply or revert"
        hours = self.settings.boost_hours
        if hours is not None and self.clock() - session["started"] >= hours * 3600:
            return f"MDBOOST_BOOST_HOURS={hours:g} elapsed"
        if self.settings.revert_on_finish:
            md = arrays.current(self.host)
            tuned = json.loads(session["arrays"])
            still = [
                a
                for a in tuned
                if (x := md.array(a)) is not None and x.sync is not None and x.sync.running
            ]
            if tuned and not still:
                return "the tuned arrays' operations finished"
        return None

    def on_tick(self) -> None:
        """Sampler hook: auto-revert when due, store finished effects, note drift.

        Skipped while an apply or revert holds the lock: the next tick does it.
        """
        if self.operation.locked() or not self.lock.acquire(blocking=False):
            return
        try:
            session = journal.open_session(self.conn)
            why = self._revert_reason(session) if session is not None else None
            if session is not None and why is not None:
                try:
                    self._revert(why)
                except TuningFailed as error:
                    log.warning("automatic revert failed, will retry: %s", error.message)
            elif session is not None:
                self._note_drift(session)
            effects.settle(self.conn, self.settings.effect_minutes * 60, self.clock())
        finally:
            self.lock.release()

    def _note_drift(self, session: sqlite3.Row) -> None:
        for knob in self.knob_states(session):
            mark = (session["id"], knob["key"], str(knob["current"]))
            if knob["drift"] and mark not in self.drift_seen:
                self.drift_seen.add(mark)
                log.warning(
                    "drift: %s is %s, mdboost set %s", knob["key"], knob["current"], knob["desired"]
                )
                array = knob["target"] if knob["target"] in json.loads(session["arrays"]) else None
                run = history.open_run(self.conn, array) if array else None
                with db.write_transaction(self.conn):
                    journal.add_event(
                        self.conn,
                        self.clock(),
                        array,
                        run["id"] if run else None,
                        "drift",
                        {
                            "key": knob["key"],
                            "desired": knob["desired"],
                            "current": knob["current"],
                        },
                    )

    def shutdown(self) -> None:
        if self.settings.revert_on_exit and journal.open_session(self.conn) is not None:
            try:
                self.revert("mdboost stopped (MDBOOST_REVERT_ON_EXIT)", wait=True)
            except (Busy, TuningFailed) as error:
                log.error("could not revert at exit: %s", error)

    # ---- reading
    def knob_states(
        self, session: sqlite3.Row, conn: sqlite3.Connection | None = None
    ) -> list[dict[str, Any]]:
        states = []
        for row in journal.session_knobs(conn or self.conn, session["id"]):
            knob = CATALOGUE[row["knob"]]
            raw = self.host.read(self.host.knob_path(knob.path, row["target"]))
            current = knob.normalise(raw) if raw is not None else None
            states.append(
                {
                    "key": row["key"],
                    "knob": row["knob"],
                    "target": row["target"],
                    "unit": knob.unit,
                    "original": row["original"],
                    "desired": row["desired"],
                    "current": current,
                    "drift": current is not None and current != row["desired"],
                }
            )
        return states

    def _crash_point(self, where: str) -> None:
        """Tests kill the real server here (MDBOOST_TEST_CRASH_AT) to prove crash safety."""
        if self.settings.test_crash_at == where:
            log.warning("MDBOOST_TEST_CRASH_AT=%s: killing this process now", where)
            os.kill(os.getpid(), signal.SIGKILL)
