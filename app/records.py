"""The records the store takes and returns, named by every layer: a run's tuning session, a
schedule, a notification destination, a queued message. Plain frozen dataclasses, no imports
from the app, so the pure models, live, tuning, notify and the web can all hold them. (The API's
bodies in app/shapes/ are records too: a Run or a Token is returned as that model.)"""

from dataclasses import dataclass


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
