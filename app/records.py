"""The records the store takes and returns, named by every layer: a run's tuning session, a
schedule, a notification destination, a queued message. Plain frozen dataclasses, no imports
from the app, so the pure models, live, tuning, notify and the web can all hold them. (The API's
bodies in app/shapes/ are records too: a Run or a Token is returned as that model.)"""

from dataclasses import dataclass
from typing import Any


# ---- the tuning journal (a session itself is app.shapes.tuning.Session)
@dataclass(frozen=True)
class JournaledKnob:
    """One knob a tuning session touched: its value before mdboost's first write and what the
    session wants it to be now, both as normalised from the kernel file ("256", "system"). The
    journal and the originals file beside the database keep the same record."""

    key: str  # "stripe_cache_size@md2", or the knob's name for a global one
    knob: str  # the catalogue's name; the path is rebuilt from it
    target: str | None  # array or disk, None for a global knob
    original: str
    desired: str


@dataclass(frozen=True)
class TuningOp:
    """One apply or revert, journaled before its first write."""

    id: int
    session_id: int
    kind: str  # apply | revert
    preset: str | None
    started: float  # unix seconds
    finished: float | None
    state: str  # in_progress | done | rolled_back | failed
    error: str | None  # a revert's reason, or what went wrong


# ---- auto-tune
@dataclass(frozen=True)
class SweepRecord:
    """An auto-tune sweep as stored (its plan and values already read from their JSON)."""

    id: int
    array: str
    run_id: int | None
    session_id: int | None  # None until its first step is written
    opened_session: bool  # no session was open before it: an abort reverts the session
    started: float  # unix seconds
    finished: float | None
    state: str  # running | done | aborted | cancelled | interrupted | refused
    reason: str | None  # why it ended, in words for the page
    start_values: dict[str, int]  # knob -> value as found when the sweep began
    plan: list[dict[str, Any]]  # [{knob, reference, candidates, climbs}] in sweep order
    chosen: dict[str, int] | None  # knob -> value kept at the end


@dataclass(frozen=True)
class SweepStepRecord:
    """One measured step of a sweep: a setting held while md made progress."""

    seq: int
    knob: str  # stripe_cache_size | read_ahead_kb
    value: int
    role: str  # reference | candidate
    written: float  # unix seconds the value was set (or kept)
    measured_from: float | None  # after the settle time
    measured_to: float | None
    done_blocks: int | None  # 1 KiB blocks of progress in the measured span
    speed_kb_s: float | None
    score: float | None  # speed / the mean of the reference steps either side
    note: str | None


# ---- history
@dataclass(frozen=True)
class LastSample:
    """What an array's newest sample recorded, as the notifier compares it with the tick."""

    run_id: int | None
    action: str | None
    done_blocks: int | None  # 1 KiB blocks
    total_blocks: int | None
    percent: float | None
    degraded: int | None  # missing members
    mismatch_cnt: int | None


@dataclass(frozen=True)
class MeasuredBoost:
    """Boost's measured effect on one run: its speed after over before."""

    array: str
    ratio: float  # after / before
    applied_at: float  # unix seconds
    action: str | None  # the run's action (reshape, resync, ...), None when the run is gone


@dataclass(frozen=True)
class MeasuredEffect:
    """A preset's latest fully measured effect on any array of the box: its speed after over
    before, and whether before was the untuned pace or another preset's."""

    array: str
    ratio: float  # after / before
    untuned: bool  # its apply opened the session: measured over the kernel's own settings


@dataclass(frozen=True)
class PlannerRun:
    """A past sync or grow as the change planner reads it: its span, its work and the highest
    max limit it ran under."""

    id: int
    array: str
    action: str
    started: float  # unix seconds
    finished: float | None  # None while it runs
    outcome: str  # completed | interrupted | running
    total_blocks: int  # 1 KiB blocks
    speed_max_kb_s: float | None  # the highest effective max limit of its samples (KiB/s)


# ---- who may change things
@dataclass(frozen=True)
class LiveSession:
    """A login session that has not expired, beside the admin password in force now: it holds
    while the password it was opened under is that one (app/web/auth.py fingerprints it)."""

    csrf: str
    password_fp: str  # the fingerprint of the password it was opened under
    password_hash: str | None  # the salted hash of the password in force now; None: none set


# ---- notifications
@dataclass(frozen=True)
class DestinationStatus:
    """A destination in use, as the account page lists it: never its URL."""

    id: int
    label: str  # scheme, host and the URL's last four characters
    source: str  # env (MDBOOST_NOTIFY) | page
    created: float  # unix seconds
    pending: int  # messages waiting
    delivered: int
    last_delivered: float | None
    last_error: str | None  # the oldest waiting message's last failure


@dataclass(frozen=True)
class QueuedMessage:
    """One message in a destination's outbox."""

    id: int
    destination_id: int
    dedup_key: str
    kind: str  # an event's kind, or summary
    created: float  # unix seconds
    message: str  # the message as JSON (senders.Message.to_json)
    next_attempt: float  # wall-clock unix seconds
    attempts: int


# ---- runs as the tick keeps them
@dataclass(frozen=True)
class OpenRun:
    """A run that has not ended: what the tick needs to go on with it or close it."""

    id: int
    array: str
    action: str


@dataclass(frozen=True)
class SampledProgress:
    """A run's newest sample as far as its progress goes: how far it was and how fast."""

    ts: float
    done_blocks: int | None  # 1 KiB blocks
    total_blocks: int | None
    speed_kb_s: float | None


# ---- schedules
DAY_S = 86400.0


@dataclass(frozen=True)
class Schedule:
    """A daily window as the store keeps it; its label in clock times is the scheduler's."""

    id: int
    preset: str
    start_minute: int  # minutes after local midnight
    end_minute: int
    window_start: float | None  # unix seconds: the window acted on now
    applied: float | None
    overridden: float | None
    removed: float | None
    closed_window: float | None = None  # the start of the last window it closed
    zone: str | None = None  # IANA name of the zone its times are in; None: the box's

    def waiting_for(self, now: float) -> bool:
        """The wall clock stands before the held window's start (it stepped back by less than a
        day, on this tick or an earlier one): the window goes on, neither ended nor applied
        again, until the clock reaches it or jumps past its end."""
        held = self.window_start
        return held is not None and 0 < held - now < DAY_S

    def carried(self, now: float, current: float | None) -> bool:
        """The wall clock stepped while this schedule held a window: into another window
        of the same schedule (say a day ahead, or back), which goes on as the one held, or back to
        less than a day before the held window's start, which is waited for; neither is applied
        or reverted again. A window the clock jumps past ends, as after a DST change."""
        held = self.window_start
        if held is None or current == held:
            return False
        return current is not None or 0 < held - now < DAY_S
