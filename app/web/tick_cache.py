"""Answers kept for the sampler's tick they were made in: a costly read asked again before the
next tick (a chart's long history, from a loop on the LAN) costs a lookup, not a query."""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

MAX_ANSWERS = 32  # per tick; the oldest goes first


class TickCache:
    """Bytes by key, all forgotten when the tick (the snapshot's time) changes."""

    def __init__(self) -> None:
        self.tick: float | None = None
        self.answers: OrderedDict[Hashable, bytes] = OrderedDict()
        self.lock = threading.Lock()  # requests run in worker threads

    def get(self, tick: float | None, key: Hashable, make: Callable[[], bytes]) -> bytes:
        with self.lock:
            if tick != self.tick:
                self.tick, self.answers = tick, OrderedDict()
            answer = self.answers.get(key)
        if answer is not None:
            return answer
        answer = make()
        with self.lock:
            if tick == self.tick:
                self.answers[key] = answer
                if len(self.answers) > MAX_ANSWERS:
                    self.answers.popitem(last=False)
        return answer
