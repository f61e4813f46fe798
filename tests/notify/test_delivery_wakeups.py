"""The delivery task sleeps between rounds instead of polling SQLite every second: a queued
message wakes it at once, a failed one is retried when its backoff is over, and `stop` ends it."""

import asyncio
import time

from app.notify import delivery, destinations
from app.notify.delivery import Deliverer, DeliveryRules
from app.notify.senders import SendFailed
from tests.notify.test_outbox import queue


class Receiver:
    """A send function that refuses its first message, then takes each; records when."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.took = asyncio.Event()
        self.loop = asyncio.get_running_loop()

    def __call__(self, url: str, message: object, timeout: float) -> None:
        self.calls.append((getattr(message, "key", "?"), time.monotonic()))
        if len(self.calls) == 1:
            raise SendFailed("HTTP 503")
        self.loop.call_soon_threadsafe(self.took.set)


def test_a_queued_message_wakes_the_task_and_a_retry_waits_its_backoff(conn):
    async def scenario() -> None:
        destinations.add(conn, "http://127.0.0.1:9/hook", time.time(), allow_local=True)
        receiver = Receiver()
        rules = DeliveryRules(first_retry_s=0.5)
        deliverer = Deliverer(conn, rules, time.time, receiver)
        assert deliverer.seconds_to_next() == delivery.MAX_WAIT_S  # nothing queued: one long sleep
        stop = asyncio.Event()
        task = asyncio.create_task(delivery.run_forever(deliverer, stop))
        # The task's first round found nothing: it now sleeps for MAX_WAIT_S unless woken.
        await asyncio.sleep(0)
        queued = time.monotonic()
        with deliverer.lock:  # the connection is the deliverer's too
            queue(conn, ["a"], time.time)
        deliverer.wake()  # what the notifier does after its transaction
        await asyncio.wait_for(receiver.took.wait(), timeout=30)
        (_, first), (key, second) = receiver.calls
        assert key == "a"
        assert first - queued < 5  # woken, not at the next poll of an hour
        assert second - first >= 0.45  # the backoff was slept, not polled through
        stop.set()
        await asyncio.wait_for(task, timeout=10)  # stop ends its hour-long sleep at once

    asyncio.run(scenario())
