"""Schedules: a preset from one local time of day to another, every day; the originals at the end.

"Boost from 01:00 to 07:00" applies boost at 01:00 (once a sync runs) and puts the original
values back at 07:00; "quiet from 07:00 to 01:00" holds the minimum low during the day. Times are
in the schedule's own zone: the zone the page showed when the owner added it (their phone's), or
the box's (TZ, else /etc/localtime) for one added through the API without a zone. A window keeps
its wall-clock times across a change of daylight saving time: that night it is an hour shorter
or longer. A person's apply,
revert or auto-tune during a window wins until the window ends. Which window a schedule acts on,
and whether it applied or was overridden, is in SQLite: a restart neither applies twice nor
forgets the revert at the end.
"""

import logging
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo

from app.records import Schedule
from app.shapes import tuning as shapes
from app.store import db, journal, schedules
from app.store.db import Connection
from app.store.schedules import in_play, in_use
from app.tuning.planning.knob_plan import KnobPlan
from app.tuning.planning.presets import UnknownPreset
from app.tuning.planning.targets import ArrayFailed, PlanError
from app.tuning.schedule.daily import (
    MINUTES_PER_DAY,
    ScheduleError,
    hhmm,
    minute_of_day,
    minutes_of,
    named_zone,
    next_start,
    parse_hhmm,
    window_at,
)
from app.tuning.session.apply import Applier, Busy, JournalUnavailable, TuningFailed

log = logging.getLogger(__name__)

_BACK = "back to the original values"


class ScheduleOverlap(ScheduleError):
    """The window overlaps another schedule's; nothing was stored."""

    status = 409


MAX_SCHEDULES = 48  # 1440 one-minute windows would toggle boost every minute


class TooManySchedules(ScheduleError):
    """MAX_SCHEDULES are in use; nothing was stored."""

    status = 409


# ---- storage


def add(
    conn: Connection,
    preset: str,
    start: str,
    end: str,
    now: float,
    zone: str | None = None,
    box_zone: tzinfo = UTC,
) -> Schedule:
    """Store a daily window in `zone` (None: `box_zone`, where the Scheduler keeps schedules
    stored without one); ScheduleError when it is empty, overlaps another one or names no zone
    this system knows."""
    start_minute, end_minute = parse_hhmm(start), parse_hhmm(end)
    if start_minute == end_minute:
        raise ScheduleError("a window needs an end different from its start")
    own_zone = named_zone(zone) if zone else box_zone
    wanted = minutes_of(start_minute, end_minute)
    with db.write_transaction(conn):
        others = in_use(conn)
        if len(others) >= MAX_SCHEDULES:
            raise TooManySchedules(
                f"at most {MAX_SCHEDULES} schedule windows: remove one before adding another"
            )
        for other in others:
            if wanted & minutes_of(*_minutes_in(other, own_zone, box_zone, now)):
                raise ScheduleOverlap(
                    f"{hhmm(start_minute)}–{hhmm(end_minute)} overlaps {label(other)}: "
                    "one window at a time, so that each end knows what to put back"
                )
        return schedules.add(conn, preset, start_minute, end_minute, now, zone or None)


def label(schedule: Schedule) -> str:
    return f"{schedule.preset} {hhmm(schedule.start_minute)}–{hhmm(schedule.end_minute)}"


def zone_of(schedule: Schedule, box_zone: tzinfo) -> tzinfo:
    return named_zone(schedule.zone) if schedule.zone else box_zone


def _minutes_in(schedule: Schedule, zone: tzinfo, box_zone: tzinfo, now: float) -> tuple[int, int]:
    """A schedule's start and end as minutes of the day in `zone`, on its next window: windows
    added from phones in different zones are compared on the same clock."""
    own = zone_of(schedule, box_zone)
    if own == zone:
        return schedule.start_minute, schedule.end_minute
    start = next_start(schedule.start_minute, now, own)
    length_s = (schedule.end_minute - schedule.start_minute) % MINUTES_PER_DAY * 60
    return minute_of_day(start, zone), minute_of_day(start + length_s, zone)


def remove(conn: Connection, schedule_id: int, now: float) -> bool:
    """Stop using a schedule; a window it holds open ends at the next tick (originals back)."""
    with db.write_transaction(conn):
        return schedules.remove(conn, schedule_id, now)


# ---- acting on them


class Scheduler:
    """Applies a window's preset when it starts (once a sync runs) and reverts when it ends."""

    def __init__(
        self, applier: Applier, plan: Callable[[str], KnobPlan], zone: tzinfo, zone_name: str
    ) -> None:
        self.applier = applier
        self.plan = plan
        self.zone = zone
        self.zone_name = zone_name
        self.errors: dict[int, str] = {}  # schedule id -> why its last apply failed

    def on_tick(self, syncing: bool, clock_stepped: bool = False) -> None:
        """Close windows that ended, then start the current one; the caller holds the lock.
        `clock_stepped`: the wall clock stepped since the last tick (see Schedule.carried)."""
        conn, now = self.applier.conn, self.applier.clock()
        found = in_play(conn)
        changed = False  # a window carried or closed: the second pass reads them again
        for schedule in found:
            window = self._window(schedule, now)
            current = window[0] if window else None
            if clock_stepped and schedule.carried(now, current):
                if current is not None:
                    with db.write_transaction(conn):
                        schedules.carry_window(conn, schedule.id, current)
                    changed = True
                continue
            if schedule.waiting_for(now):
                continue  # the clock stepped back before the held window: not an end
            ended = schedule.window_start is not None and schedule.window_start != current
            if ended and not self._end(schedule):
                return  # the revert failed: try again next tick, start nothing meanwhile
            changed = changed or ended
        for schedule in in_play(conn) if changed else found:
            window = self._window(schedule, now)
            if window is None or window[0] == schedule.closed_window:
                continue  # no window now, or one closed already (the clock stepped back into it)
            if schedule.window_start != window[0]:
                with db.write_transaction(conn):
                    schedule = schedules.open_window(conn, schedule.id, window[0])
            if schedule.applied is None and schedule.overridden is None and syncing:
                self._start(schedule, now)

    def note_manual(self) -> None:
        """A person applied, reverted or auto-tuned: the open window leaves things as they are
        until it ends. The caller holds the lock."""
        # One UPDATE: autocommit makes it a transaction of its own, as atomic and durable as
        # BEGIN IMMEDIATE around it, two statements fewer on every press.
        schedules.override_open_windows(self.applier.conn, self.applier.clock())

    def _window(self, schedule: Schedule, now: float) -> tuple[float, float] | None:
        if schedule.removed is not None:
            return None
        return window_at(
            schedule.start_minute, schedule.end_minute, now, zone_of(schedule, self.zone)
        )

    def _start(self, schedule: Schedule, now: float) -> None:
        conn = self.applier.conn
        try:
            self.applier.apply(schedule.preset, self.plan(schedule.preset))
            self.errors.pop(schedule.id, None)
            log.info("schedule %s: applied %s", label(schedule), schedule.preset)
        except Busy:
            return  # someone else's apply or revert: the next tick tries again
        except (
            UnknownPreset,
            PlanError,
            ArrayFailed,
            TuningFailed,
            JournalUnavailable,
        ) as error:
            # Not retried every tick: the log and the page say why, the next window tries again.
            self.errors[schedule.id] = str(error)
            log.error(
                "schedule %s: could not apply %s: %s", label(schedule), schedule.preset, error
            )
        with db.write_transaction(conn):
            schedules.mark_applied(conn, schedule.id, now)

    def _end(self, schedule: Schedule) -> bool:
        """Put the originals back at the end of a window; False when that must be retried."""
        conn = self.applier.conn
        if journal.open_session(conn) is not None:
            try:
                self.applier.revert_locked(f"schedule {label(schedule)}: the window ended")
            except (TuningFailed, JournalUnavailable) as error:
                log.warning(
                    "schedule %s: revert at the end failed, will retry: %s", label(schedule), error
                )
                return False
        with db.write_transaction(conn):
            schedules.close_window(conn, schedule.id)
        return True

    def view(self, conn: Connection, now: float) -> shapes.Schedules:
        """The schedules, which one holds a window now, and the next change, for page and API."""
        entries: list[shapes.ScheduleBody] = []
        changes: list[tuple[float, str]] = []
        for schedule in in_use(conn):
            zone = zone_of(schedule, self.zone)
            window = window_at(schedule.start_minute, schedule.end_minute, now, zone)
            acting = window is not None and schedule.window_start == window[0]
            entries.append(
                shapes.ScheduleBody(
                    id=schedule.id,
                    preset=schedule.preset,
                    start=hhmm(schedule.start_minute),
                    end=hhmm(schedule.end_minute),
                    zone=schedule.zone or self.zone_name,
                    open=window is not None,
                    applied=acting and schedule.applied is not None,
                    overridden=acting and schedule.overridden is not None,
                    error=self.errors.get(schedule.id),
                )
            )
            if window is not None:
                changes.append((window[1], _BACK))
            changes.append((next_start(schedule.start_minute, now, zone), schedule.preset))
        upcoming = None
        if changes:
            ts = min(c[0] for c in changes)
            # An end and the next window's start at the same minute: the originals, then it.
            at_once = sorted((c for c in changes if c[0] == ts), key=lambda c: c[1] != _BACK)
            upcoming = shapes.NextChange(
                ts=ts,
                local=datetime.fromtimestamp(ts, self.zone).strftime("%a %H:%M"),
                what=", then ".join(c[1] for c in at_once),
                in_s=ts - now,
            )
        return shapes.Schedules(zone=self.zone_name, schedules=entries, next=upcoming)
