"""Start-up: resume or revert a session that a stop or crash left open, from journal and kernel."""

import logging

from app.store import journal
from app.tuning.session.apply import Applier, TuningFailed
from app.tuning.session.policy import Policy

log = logging.getLogger(__name__)


def reconcile(applier: Applier, policy: Policy) -> str | None:
    """Resume or revert a session left open by a stop or crash; returns what it did.

    Never raises: a start-up that fails here would crash-loop under `restart: unless-stopped`
    (issue 13), and the open session would stay open anyway.
    """
    try:
        return _reconcile(applier, policy)
    except Exception:
        log.exception("reconciling the tuning journal failed; mdboost starts anyway")
        return "failed"


def _reconcile(applier: Applier, policy: Policy) -> str | None:
    session = journal.open_session(applier.conn)
    if session is None:
        return None
    why = policy.revert_reason(session, at_start=True)
    if why is None:
        log.info(
            "resuming tuning session %s (%s): its arrays are still syncing",
            session["id"],
            session["preset"],
        )
        return "resumed"
    log.warning("reverting tuning session %s at start-up: %s", session["id"], why)
    try:
        applier.revert(why, wait=True)
    except TuningFailed:
        return "revert failed"
    return "reverted"
