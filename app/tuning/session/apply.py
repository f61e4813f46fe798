"""Apply a plan and revert a session: journal the originals, write, read back, roll back on failure.

One apply or revert at a time (Busy otherwise). Originals are taken once per session, so a second
preset over the first still reverts to what mdboost found.
"""

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from app.config import Settings
from app.kernel.host import Host
from app.kernel.knobs import read_knob
from app.live.knobs import journaled_knobs, knobs_now
from app.live.snapshot import KnobNow
from app.md.knobs import CATALOGUE, SYSTEM, Knob
from app.records import JournaledKnob
from app.shapes.tuning import Restored, Session, TuningDone
from app.store import db, journal, originals
from app.tuning.errors import TuningError
from app.tuning.planning.knob_plan import KnobChange, KnobPlan
from app.tuning.session.revert import (
    UnrecordedRevert,
    record_revert,
    revert_steps,
    unrecorded_message,
)

# Told, under `lock`, right after an apply or a revert: the journal's open session (None once
# reverted) and its knobs, each written one with the value the kernel read back.
OnWrite = Callable[[Session | None, list[KnobNow]], None]

log = logging.getLogger(__name__)


LOCK_WAIT_S = 30.0


class Busy(TuningError):
    """Another apply or revert is running."""

    def detail(self) -> dict[str, Any]:
        return {"message": str(self), "busy": True}


class JournalUnavailable(TuningError):
    """The tuning journal (SQLite) cannot be written, most likely because its disk is full."""

    status = 503
    retry_after_s = 60


@dataclass
class TuningFailed(TuningError):
    """A kernel write or read-back failed; what this operation wrote was put back."""

    message: str
    knob: str | None = None
    target: str | None = None
    value: str | None = None
    kernel: str | None = None
    rolled_back: list[str] = field(default_factory=list)
    rollback_errors: list[str] = field(default_factory=list)

    def detail(self) -> dict[str, Any]:
        return self.to_json()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def write_order(changes: list[KnobChange]) -> list[KnobChange]:
    """Raise maxima first and lower them last, so min <= max holds after every single write."""

    def rank(change: KnobChange) -> int:
        if not change.knob.endswith("_max") or not all(
            v == SYSTEM or v.isdigit() for v in (change.from_value, change.to_value)
        ):
            return 1
        rising = change.from_value == SYSTEM or (
            change.to_value != SYSTEM and int(change.to_value) >= int(change.from_value)
        )
        return 0 if rising else 2

    return sorted(changes, key=rank)


class Applier:
    """The only writer of kernel knobs, and the locks that keep its writes one at a time."""

    def __init__(
        self,
        host: Host,
        conn: db.Connection,
        clock: Callable[[], float],
        settings: Settings,
    ) -> None:
        self.host = host
        self.conn = conn
        self.clock = clock
        self.settings = settings
        # `operation` is held for a whole apply or revert: a second one gets Busy (409).
        # `lock` guards the connection and the knobs; the sampler's hook takes it for a moment
        # each tick, so an apply waits for it rather than failing (seen in CI as a stray 409).
        self.operation = threading.Lock()
        self.lock = threading.Lock()
        # A revert done in the kernel whose journal write failed (disk full); held by `lock`.
        self.unrecorded: UnrecordedRevert | None = None
        # The present listens here, so that a page shows a write's own read-back at once.
        self.on_write: OnWrite | None = None
        # The open session's originals, outside SQLite: they outlive a damaged database.
        self.originals_path = originals.path_beside(settings.db)

    @contextmanager
    def exclusive(self, wait: bool) -> Iterator[None]:
        """One apply or revert at a time (Busy otherwise), then the knobs to itself."""
        if not self.operation.acquire(blocking=wait, timeout=LOCK_WAIT_S if wait else -1):
            raise Busy("another apply or revert is running")
        try:
            if not self.lock.acquire(timeout=LOCK_WAIT_S):
                raise Busy("the sampler's tuning check did not finish in time")
            try:
                self.record_unrecorded()
                yield
            finally:
                self.lock.release()
        finally:
            self.operation.release()

    def awaiting_record(self, session_id: int) -> bool:
        """True when this session's originals are back in the kernel and only its record waits."""
        pending = self.unrecorded
        return pending is not None and pending.session_id == session_id

    def record_unrecorded(self) -> None:
        """Journal a revert that found the disk full, once it has room; the caller holds `lock`."""
        pending = self.unrecorded
        if pending is None or not record_revert(self.conn, pending):
            return  # nothing waits, or still no room: the next tick tries again
        self.unrecorded = None
        self._forget_originals()
        log.info(
            "journaled the revert of session %d, which waited for disk space", pending.session_id
        )

    def keep_originals(
        self, session_id: int, writing: list[KnobChange] | None = None
    ) -> tuple[JournaledKnob, ...]:
        """Copy the session's originals to their own file, flushed to disk, with the values
        `writing` is about to put in the kernel as the desired ones, during this boot; returns
        the knobs as kept, which the journal holds too once the apply is finished."""
        found = journal.session_originals(self.conn, session_id)
        desired = {change.key: change.to_value for change in writing or []}
        knobs = tuple(replace(k, desired=desired.get(k.key, k.desired)) for k in found.knobs)
        kept = replace(found, knobs=knobs, boot_id=self.host.boot_id)
        originals.write(self.originals_path, kept)
        return knobs

    def _forget_originals(self) -> None:
        """The session's revert is journaled: its originals file goes (or, if that fails, the
        next start finds the session ended in the journal and drops the file then)."""
        try:
            originals.remove(self.originals_path)
        except OSError as error:
            log.warning("cannot remove %s: %s", self.originals_path, error.strerror or error)

    # ---- apply
    def apply(self, name: str, plan: KnobPlan, step: str | None = None) -> TuningDone:
        """Write a plan of preset `name`; the caller holds exclusive() (or `lock`, in a tick).
        `step` labels one step of an auto-tune sweep in the journal's events."""
        changes = write_order(list(plan.changes))
        if not changes:
            return TuningDone(ok=True, op_id=None, plan=plan.shape(), applied=[])
        now = self.clock()
        try:
            session_id, op_id = journal.begin_apply(
                self.conn, name, list(plan.arrays), changes, now
            )
        except db.Error as error:
            raise JournalUnavailable(
                f"nothing was changed: the originals must be journaled first, and the tuning "
                f"journal cannot be written ({error})"
            ) from None
        try:
            kept = self.keep_originals(session_id, changes)
        except (OSError, db.Error) as error:
            reason = getattr(error, "strerror", None) or str(error)
            self._abandon(session_id, op_id, f"the originals file cannot be written: {reason}")
            raise JournalUnavailable(
                f"nothing was changed: the originals must be saved first, and "
                f"{self.originals_path} cannot be written ({reason})"
            ) from None
        self._crash_point("after_journal")
        written: list[KnobChange] = []
        try:
            for change in changes:
                self._write(change, change.to_value)
                written.append(change)
                if len(written) == 1:
                    self._crash_point("mid_write")
            self._crash_point("after_write")
            read_back = {change.key: self._verify(change, change.to_value) for change in changes}
        except TuningFailed as failure:
            self._roll_back(written, failure)
            self._abandon(session_id, op_id, failure.message)
            log.error("apply %s failed and was rolled back: %s", name, failure.message)
            raise
        try:
            session = journal.finish_apply(
                self.conn, session_id, op_id, name, list(plan.arrays), changes, self.clock(), step
            )
        except db.Error as error:
            # An apply the journal does not know of must not stay in the kernel, nor a session
            # whose targets the kernel no longer holds (false drift until a revert).
            unjournaled = TuningFailed(f"the tuning journal cannot be written ({error})")
            self._roll_back(changes, unjournaled)
            self._abandon(session_id, op_id, unjournaled.message)
            log.error("apply %s rolled back: %s", name, unjournaled.message)
            raise JournalUnavailable(
                f"{name} was taken back out of the kernel: {unjournaled.message}"
            ) from None
        log.info("applied %s to %s: %d knobs", name, ", ".join(plan.arrays), len(changes))
        self._written(session, read_back, kept)
        return TuningDone(ok=True, op_id=op_id, plan=plan.shape(), applied=[c.key for c in changes])

    def _abandon(self, session_id: int, op_id: int, message: str) -> None:
        """Journal that an apply was rolled back; when even that fails, the op stays in progress
        and the next start-up's reconcile puts the originals back."""
        try:
            journal.abandon_apply(self.conn, session_id, op_id, message, self.clock())
        except db.Error as error:
            log.error("cannot journal a rolled-back apply (%s): reconciled at next start", error)
            return
        if journal.open_session(self.conn) is None:
            self._forget_originals()

    def _write(self, change: KnobChange, value: str, restoring: bool = False) -> None:
        """Write one knob. Values from users and presets must lie in the catalogue's range;
        `restoring` a value the kernel showed (an original, md's floor) needs only its form."""
        knob = CATALOGUE[change.knob]
        where = f" on {change.target}" if change.target else ""
        try:
            text = knob.restorable(value) if restoring else knob.validate(value)
        except ValueError as error:
            raise TuningFailed(
                f"not written{where}: {error}", knob=change.knob, target=change.target, value=value
            ) from None
        try:
            self.host.write(self.host.knob_path(knob.path, change.target), text)
        except OSError as error:
            raise TuningFailed(
                f"the kernel refused {change.knob}={text}{where}: {error.strerror or error}",
                knob=change.knob,
                target=change.target,
                value=text,
                kernel=error.strerror or str(error),
            ) from None

    def _verify(self, change: KnobChange, value: str) -> str:
        """The value the kernel reads back, which must be the one written."""
        try:
            seen = read_knob(self.host, CATALOGUE[change.knob], change.target)
        except OSError as error:
            seen = f"unreadable: {error.strerror or error}"
        if seen != value:
            raise TuningFailed(
                f"{change.knob} on {change.target or 'the system'} reads back {seen!r}, "
                f"not {value!r}",
                knob=change.knob,
                target=change.target,
                value=value,
                kernel=f"read back {seen!r}",
            )
        return value

    def _written(
        self,
        session: Session | None,
        read_back: dict[str, str],
        journal_holds: tuple[JournaledKnob, ...] | None = None,
    ) -> None:
        """Tell the listener what the journal holds now (`session`: its open session, as the
        write left it; `journal_holds`: its knobs, when the caller knows them) and what the
        kernel read back."""
        if self.on_write is None:
            return

        def read(key: str, knob: Knob | None, target: str | None) -> str | None:
            return read_back.get(key)

        if session is None:
            knobs = []
        elif journal_holds is not None:
            knobs = knobs_now(journal_holds, read)
        else:
            knobs = journaled_knobs(self.conn, session, read)
        self.on_write(session, knobs)

    def _roll_back(self, written: list[KnobChange], failure: TuningFailed) -> None:
        for change in reversed(written):
            try:
                self._write(change, change.from_value, restoring=True)
                failure.rolled_back.append(change.key)
            except TuningFailed as error:
                failure.rollback_errors.append(error.message)

    # ---- revert
    def revert(self, reason: str = "requested", wait: bool = False) -> TuningDone:
        with self.exclusive(wait):
            return self.revert_locked(reason)

    def revert_locked(self, reason: str) -> TuningDone:
        """Put the open session's originals back; the caller holds `lock`."""
        session = journal.open_session(self.conn)
        if session is None:
            return TuningDone(ok=True, restored=[], detail="nothing to revert")
        if self.awaiting_record(session.id):
            raise JournalUnavailable(
                unrecorded_message(self.unrecorded, "still waiting: its disk is full")
            )
        started = self.clock()
        op_id: int | None
        try:
            op_id = journal.begin_revert(self.conn, session.id, reason, started)
        except db.Error as error:
            # The originals are on disk already: put the kernel back first, record it later.
            log.error(
                "cannot journal the start of a revert (%s); reverting the kernel anyway", error
            )
            op_id = None
        self._crash_point("revert_after_journal")
        steps, gone, errors = revert_steps(self.host, self.conn, session.id)
        restored: list[Restored] = []
        read_back: dict[str, str] = {}
        for change in write_order(steps):
            try:
                if change.from_value != change.to_value:
                    self._write(change, change.to_value, restoring=True)
                    self._crash_point("revert_mid_write")
                read_back[change.key] = self._verify(change, change.to_value)
                restored.append(
                    Restored(key=change.key, from_=change.from_value, to=change.to_value)
                )
            except TuningFailed as failure:
                errors.append(failure.message)
        if gone:
            # md forgets an array's settings when it stops, and a pulled disk takes its own
            # along: there is nothing left to put back.
            log.warning(
                "%s: the array or disk is gone (stopped or removed); counted as restored",
                ", ".join(gone),
            )
        self._crash_point("revert_after_write")
        try:
            op_id = journal.finish_revert(
                self.conn,
                session.id,
                op_id,
                reason,
                restored,
                errors,
                started,
                self.clock(),
                gone,
            )
        except db.Error as error:
            if errors:
                errors.append(f"and the tuning journal cannot be written ({error})")
            else:
                self.unrecorded = UnrecordedRevert(
                    session.id, op_id, reason, restored, gone, started, self.clock()
                )
                log.error("reverted %d knobs, but cannot journal it: %s", len(restored), error)
                raise JournalUnavailable(unrecorded_message(self.unrecorded, str(error))) from None
        if not errors:
            self._forget_originals()
        # An incomplete revert leaves the session open.
        self._written(journal.open_session(self.conn) if errors else None, read_back)
        if errors:
            log.error(
                "revert (%s) incomplete; the session stays open: %s", reason, "; ".join(errors)
            )
            raise TuningFailed("revert incomplete: " + "; ".join(errors), rollback_errors=errors)
        log.info("reverted %d knobs to their originals (%s)", len(restored), reason)
        return TuningDone(
            ok=True,
            op_id=op_id,
            restored=restored,
            gone=gone,
            reason=reason,
        )

    def forget_locked(self, reason: str) -> None:
        """Close the open session without a kernel write; the caller holds `lock`. After the
        NAS restarted the kernel holds none of the session's values, and the ones it booted
        with are what it should keep: the session's originals are of another boot."""
        session = journal.open_session(self.conn)
        if session is None:
            return
        started = self.clock()
        try:
            op_id = journal.begin_revert(self.conn, session.id, reason, started)
            journal.finish_revert(
                self.conn, session.id, op_id, reason, [], [], started, self.clock()
            )
        except db.Error as error:
            raise JournalUnavailable(f"the tuning journal cannot be written ({error})") from None
        self._forget_originals()
        log.info("closed tuning session %d without a kernel write: %s", session.id, reason)
        self._written(None, {})

    def _crash_point(self, where: str) -> None:
        """Tests kill the real server here (MDBOOST_TEST_CRASH_AT) to prove crash safety."""
        if self.settings.test_crash_at == where:
            log.warning("MDBOOST_TEST_CRASH_AT=%s: killing this process now", where)
            os.kill(os.getpid(), signal.SIGKILL)
