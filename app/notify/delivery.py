"""The background task that empties the outbox: each destination's head, retried with backoff.

It runs beside the sampler, never in it: sends happen on a small thread pool of their own, so a
receiver that hangs until its timeout delays only its own queue, never a sample.
"""

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from app.config import Settings
from app.notify import destinations, outbox, senders
from app.store import db
from app.store import notify as stored

log = logging.getLogger(__name__)

# The longest sleep between rounds when nothing is due: a safety net only (a queued message
# wakes the task at once, a retry's time is known); and the wait after a failed round.
MAX_WAIT_S = 3600.0
FAILED_ROUND_WAIT_S = 5.0
# A head due now that the round did not take (its destination's URL unreadable): look again in
# a second, as the old poll did, rather than spin.
UNTAKEN_WAIT_S = 1.0
SENDER_THREADS = 4
# A message sent directly (the outbox could not hold it) is tried this often, this many times.
DIRECT_RETRY_S = 30.0
DIRECT_ATTEMPTS = 20


@dataclass(frozen=True)
class DeliveryRules:
    """Delivery settings (MDBOOST_NOTIFY_*)."""

    max_per_minute: int = 10
    first_retry_s: float = 5.0
    max_retry_s: float = 600.0
    timeout_s: float = senders.TIMEOUT_S
    allow_local: bool = False  # receivers on the NAS itself or its link (see senders.send)


def rules_from(settings: Settings) -> DeliveryRules:
    return DeliveryRules(
        max_per_minute=settings.notify_max_per_minute,
        first_retry_s=settings.notify_retry_seconds,
        max_retry_s=settings.notify_retry_max_seconds,
        timeout_s=settings.notify_timeout_seconds,
        allow_local=settings.notify_allow_local,
    )


class Deliverer:
    """Owns the outbox's delivery writes; `pass_once` is one round over every destination."""

    def __init__(
        self,
        conn: db.Connection,
        rules: DeliveryRules,
        wall_clock: Callable[[], float] = time.time,
        send: Callable[[str, senders.Message, float], object] | None = None,
    ) -> None:
        self.conn = conn
        self.rules = rules
        self.wall_clock = wall_clock
        self.send = send or partial(senders.send, allow_local=rules.allow_local)
        self.lock = threading.Lock()  # the connection is shared by the sender threads
        self.on_wake: Callable[[], object] | None = None
        # Messages the outbox could not take (a full disk), per destination, and attempts made;
        # held in memory only: a restart before they go loses them.
        self.direct: list[tuple[int, senders.Message, int]] = []

    def listen(self, on_wake: Callable[[], object] | None) -> None:
        """`on_wake` is called (from any thread) when a message is queued."""
        self.on_wake = on_wake

    def wake(self) -> None:
        """Something was queued: deliver now, not at the next due time (thread-safe)."""
        if self.on_wake is not None:
            self.on_wake()

    def seconds_to_next(self) -> float:
        """Until the earliest head is due (0 if one is), at most MAX_WAIT_S (DIRECT_RETRY_S
        while a direct message waits)."""
        with self.lock:
            heads = stored.heads(self.conn)
            now = self.wall_clock()
            longest = DIRECT_RETRY_S if self.direct else MAX_WAIT_S
        due = min((h.next_attempt for h in heads), default=now + longest)
        return min(max(due - now, 0.0), longest)

    def send_directly(self, message: senders.Message) -> None:
        """Send `message` to every destination without the outbox (thread-safe): reading the
        destinations needs no room on the disk, queueing them does."""
        with self.lock:
            targets = stored.active_destination_ids(self.conn)
            self.direct += [(target, message, 0) for target in targets]
        self.wake()

    def send_direct_once(self) -> int:
        """One attempt at each message held for sending directly; how many were taken."""
        with self.lock:
            held, self.direct = self.direct, []
            urls = {d: stored.destination_url(self.conn, d) for d, _, _ in held}
        taken = 0
        for destination_id, message, attempts in held:
            url = urls[destination_id]
            if url is None:
                continue  # removed meanwhile
            try:
                self.send(url, message, self.rules.timeout_s)
            except senders.SendFailed as error:
                if attempts + 1 < DIRECT_ATTEMPTS:
                    with self.lock:
                        self.direct.append((destination_id, message, attempts + 1))
                log.warning(
                    "notify: %s (direct) to %s failed: %s",
                    message.key,
                    destinations.label(url),
                    error,
                )
                continue
            taken += 1
            log.info("notify: %s delivered directly to %s", message.key, destinations.label(url))
        return taken

    @classmethod
    def open(cls, settings: Settings, wall_clock: Callable[[], float] = time.time) -> "Deliverer":
        return cls(db.connect(settings.db), rules_from(settings), wall_clock)

    def due(self) -> list[tuple[str, outbox.DueMessage]]:
        with self.lock:
            jobs = outbox.due_jobs(self.conn, self.wall_clock(), self.rules.max_per_minute)
            found = [(stored.destination_url(self.conn, job.destination_id), job) for job in jobs]
        return [(url, job) for url, job in found if url is not None]

    def attempt(self, url: str, job: outbox.DueMessage) -> bool:
        """Send one message, then record the result; True when the receiver took it."""
        name = destinations.label(url)
        try:
            self.send(url, job.message, self.rules.timeout_s)
        except senders.SendFailed as error:
            with self.lock:
                delay = outbox.mark_failed(
                    self.conn,
                    job.row_id,
                    str(error),
                    self.wall_clock(),
                    self.rules.first_retry_s,
                    self.rules.max_retry_s,
                )
            log.warning(
                "notify: %s to %s failed (attempt %d), retry in %.0f s: %s",
                job.message.key,
                name,
                job.attempts + 1,
                delay,
                error,
            )
            return False
        with self.lock:
            stored.mark_delivered(self.conn, job.row_id, self.wall_clock())
        log.info("notify: %s delivered to %s", job.message.key, name)
        return True

    def pass_once(self) -> int:
        """Deliver every due head one after another (tests; the task runs them in parallel)."""
        return sum(self.attempt(url, job) for url, job in self.due())


async def run_forever(deliverer: Deliverer, stop: asyncio.Event) -> None:
    """Deliver until `stop` is set; a failing round is logged and the next one tries again.

    Between rounds it sleeps until the next head is due (a retry's backoff, a rate limit's
    minute), or until `deliverer.wake()` says something was queued, or `stop`: no polling, so an
    idle daemon does not wake for it (a one-second poll costs ~90 thread switches a minute)."""
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    deliverer.listen(lambda: loop.call_soon_threadsafe(woken.set))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        with ThreadPoolExecutor(SENDER_THREADS, thread_name_prefix="notify") as pool:
            while not stop.is_set():
                woken.clear()  # before the round: a message queued during it wakes the next
                wait_s = await _round(deliverer, loop, pool)
                if wait_s == 0:
                    continue  # a backlog flows at the receivers' pace
                waking = asyncio.ensure_future(woken.wait())
                await asyncio.wait(
                    {stopping, waking}, timeout=wait_s, return_when="FIRST_COMPLETED"
                )
                waking.cancel()
    finally:
        deliverer.listen(None)
        stopping.cancel()


async def _round(
    deliverer: Deliverer, loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor
) -> float:
    """One round: every due head, one per destination in parallel (each destination in order);
    seconds to sleep after it (0: something was delivered, look again at once)."""
    try:
        if deliverer.direct:
            await loop.run_in_executor(pool, deliverer.send_direct_once)
        jobs = await loop.run_in_executor(pool, deliverer.due)
        results = await asyncio.gather(
            *(loop.run_in_executor(pool, deliverer.attempt, url, job) for url, job in jobs)
        )
        if any(results):
            return 0.0
        wait_s = await loop.run_in_executor(pool, deliverer.seconds_to_next)
        return wait_s if wait_s > 0 else UNTAKEN_WAIT_S
    except Exception:
        log.exception("notify: delivery round failed; retrying")
        return FAILED_ROUND_WAIT_S
