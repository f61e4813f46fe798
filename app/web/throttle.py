"""Guessing throttles: wrong passwords and wrong bearer tokens, per client address and overall.

Each client address may fail FAILURES_ALLOWED times a minute; all of them together
OVERALL_FAILURES_ALLOWED times, after which only an address with no failure yet may try (one
guess each). Memory is bounded (MAX_TRACKED addresses) without forgetting anyone blocked: when
the table is full of addresses that still count, a new one waits instead of pushing one out.
IPv6 clients count per /64, the block one host is usually given (RFC 4291 section 2.5.4).
"""

import ipaddress
import threading
import time
from collections import deque

FAILURES_ALLOWED = 5
OVERALL_FAILURES_ALLOWED = 300
FAILURE_WINDOW_S = 60.0
MAX_TRACKED = 10_000


def client_key(address: str) -> str:
    """The address a throttle counts: an IPv6 address's /64, any other address as it is."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


class Throttle:
    """Failures per client in the last minute; `wait` says how long a client must wait first."""

    def __init__(
        self,
        per_client: int = FAILURES_ALLOWED,
        overall: int = OVERALL_FAILURES_ALLOWED,
        window_s: float = FAILURE_WINDOW_S,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window_s = window_s
        self.max_tracked = max_tracked
        self.failures: dict[str, deque[float]] = {}  # client key -> its failures' times
        self.recent: deque[float] = deque()  # every client's failures in the window
        self.lock = threading.Lock()

    def wait(self, address: str) -> int:
        """Seconds `address` must wait before its next try; 0 when it may try now."""
        with self.lock:
            return self._wait(client_key(address), time.monotonic())

    def reserve(self, address: str) -> int:
        """Count a try before it is checked (a slow check must not let parallel guesses slip
        past the count); the seconds to wait instead, when the client may not try now."""
        key, now = client_key(address), time.monotonic()
        with self.lock:
            wait = self._wait(key, now)
            if wait == 0:
                self._count(key, now)
            return wait

    def failed(self, address: str) -> None:
        """Count a failure checked already (a cheap check: a bearer token's hash)."""
        with self.lock:
            self._count(client_key(address), time.monotonic())

    def succeeded(self, address: str) -> None:
        """The secret was right: the client's earlier failures no longer count against it."""
        with self.lock:
            self.failures.pop(client_key(address), None)

    def _wait(self, key: str, now: float) -> int:
        self._expire(now)
        mine = self.failures.get(key)
        while mine and now - mine[0] > self.window_s:
            mine.popleft()
        if mine is not None and not mine:
            del self.failures[key]
            mine = None
        if mine is not None and len(mine) >= self.per_client:
            return self._until(mine[0], now)
        if mine is not None and len(self.recent) >= self.overall:
            return self._until(self.recent[0], now)
        if mine is None and len(self.failures) >= self.max_tracked:
            return self._until(self.recent[0], now)  # full of clients that still count
        return 0

    def _count(self, key: str, now: float) -> None:
        self.failures.setdefault(key, deque()).append(now)
        self.recent.append(now)

    def _until(self, first: float, now: float) -> int:
        return int(self.window_s - (now - first)) + 1

    def _expire(self, now: float) -> None:
        """Drop failures older than the window, and clients left with none: whoever is still
        blocked has a failure inside it, so no blocked client is forgotten."""
        while self.recent and now - self.recent[0] > self.window_s:
            self.recent.popleft()
        # Each client still counting has a failure in `recent`: a table larger than it holds
        # clients with none left. Swept when it is twice that, or full, so sweeps stay rare.
        stale = len(self.failures) > len(self.recent)
        if not stale or (
            len(self.failures) < self.max_tracked and len(self.failures) <= 2 * len(self.recent)
        ):
            return
        for key in list(self.failures):
            times = self.failures[key]
            while times and now - times[0] > self.window_s:
                times.popleft()
            if not times:
                del self.failures[key]
