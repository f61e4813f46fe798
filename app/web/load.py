"""Load shedding with fair shares: a few requests at a time, each client address a bounded part
of them, the owner a lane of their own, and 503 with Retry-After beyond the queue.

Each request renders in a worker thread with its own database connection; 200 clients on `/`
grew the server from 58 to 172 MB, and a NAS has little RAM: overload costs a 503, not memory.
Health checks and static files pass: they are cheap, and a page that did load must not lose its
stylesheet.

- A request holds a shared slot until its answer starts (its work is done by then); it counts
  against its address's share until the answer is written, so answers nobody reads hold no slot
  and stop only their own address (the connection guard drops them: web/connections.py).
- A freed slot goes to the waiting address with the fewest requests in progress; when the queue
  is full, the address with the most queued loses its newest.
- Requests with a valid token or login session (`owner`) have OWNER_SLOTS of their own: Revert
  and the owner's page answer while anyone else holds every shared slot.
"""

import asyncio
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

RETRY_AFTER_S = 2
UNLIMITED_PATHS = ("/healthz", "/static/")
OWNER_SLOTS = 2


@dataclass(eq=False)
class Waiter:
    client: str
    owner: bool
    granted: asyncio.Future[str] = field(default_factory=asyncio.Future)  # the lane given


class LoadLimit:
    """At most `max_active` requests in the app (half of them per address) and `max_waiting`
    queued (a quarter per address); the rest get 503. `owner` says whether a request carries
    valid credentials."""

    def __init__(
        self,
        app: ASGIApp,
        max_active: int,
        max_waiting: int,
        owner: Callable[[Scope], Awaitable[bool]],
    ) -> None:
        self.app = app
        self.owner = owner
        self.shared_slots = max_active
        self.per_client = max(1, max_active // 2)
        self.max_waiting = max_waiting
        self.waiting_per_client = max(1, max_waiting // 4)
        self.in_use = {"shared": 0, "owner": 0}
        self.in_progress: Counter[str] = Counter()  # per address, until its answer is written
        self.queues: dict[str, deque[Waiter]] = {}
        self.waiting = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(UNLIMITED_PATHS):
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else ""
        owner = await self.owner(scope)
        lane = self._start_now(client, owner)
        if lane is None:
            waiter = Waiter(client, owner)
            if not self._enqueue(waiter):
                await _busy(scope, receive, send)
                return
            try:
                lane = await waiter.granted
            except asyncio.CancelledError:
                self._withdraw(waiter)
                raise
            if not lane:
                await _busy(scope, receive, send)
                return
        held = [lane]

        async def send_and_free(message: Message) -> None:
            if message["type"] == "http.response.start" and held:
                self._free_slot(held.pop())  # the work is done: writing it needs no slot
            await send(message)

        try:
            await self.app(scope, receive, send_and_free)
        finally:
            if held:
                self._free_slot(held.pop())
            if lane == "shared":
                self._answered(client)

    def _start_now(self, client: str, owner: bool) -> str | None:
        if owner and self.in_use["owner"] < OWNER_SLOTS:
            self.in_use["owner"] += 1
            return "owner"
        if not self.waiting and self._may_start(client):
            self._take_shared(client)
            return "shared"
        return None

    def _may_start(self, client: str) -> bool:
        return self.in_use["shared"] < self.shared_slots and self.in_progress[client] < (
            self.per_client
        )

    def _take_shared(self, client: str) -> None:
        self.in_use["shared"] += 1
        self.in_progress[client] += 1

    def _answered(self, client: str) -> None:
        self.in_progress[client] -= 1
        if self.in_progress[client] <= 0:
            del self.in_progress[client]
        self._grant()

    def _free_slot(self, lane: str) -> None:
        self.in_use[lane] -= 1
        self._grant()

    def _enqueue(self, waiter: Waiter) -> bool:
        """Queue `waiter`; False when it is refused. A full queue refuses the heaviest address
        first: the one with the most waiting loses its newest, unless that is this address."""
        queue = self.queues.get(waiter.client, deque())
        if len(queue) >= self.waiting_per_client and not waiter.owner:
            return False
        if self.waiting >= self.max_waiting:
            heaviest = max(self.queues, key=lambda c: len(self.queues[c]))
            if len(self.queues[heaviest]) <= len(queue) + 1:
                return False
            refused = self.queues[heaviest].pop()
            self._forget_queue(heaviest)
            self.waiting -= 1
            refused.granted.set_result("")
        self.queues[waiter.client] = queue
        queue.append(waiter)
        self.waiting += 1
        return True

    def _withdraw(self, waiter: Waiter) -> None:
        queue = self.queues.get(waiter.client)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            self.waiting -= 1
            self._forget_queue(waiter.client)
        elif waiter.granted.done() and (lane := waiter.granted.result()):
            self._free_slot(lane)
            if lane == "shared":
                self._answered(waiter.client)

    def _forget_queue(self, client: str) -> None:
        if not self.queues.get(client):
            self.queues.pop(client, None)

    def _grant(self) -> None:
        """Hand free slots to waiters: the owner's first, then the address doing least."""
        while self.waiting:
            owners = [q[0] for q in self.queues.values() if q[0].owner]
            if owners and self.in_use["owner"] < OWNER_SLOTS:
                self._hand(owners[0], "owner")
                continue
            ready = [c for c in self.queues if self._may_start(c)]
            if not ready:
                return
            client = min(ready, key=lambda c: (not self.queues[c][0].owner, self.in_progress[c]))
            self._take_shared(client)
            self._hand(self.queues[client][0], "shared")

    def _hand(self, waiter: Waiter, lane: str) -> None:
        if lane == "owner":
            self.in_use["owner"] += 1
        self.queues[waiter.client].popleft()
        self._forget_queue(waiter.client)
        self.waiting -= 1
        waiter.granted.set_result(lane)


async def _busy(scope: Scope, receive: Receive, send: Send) -> None:
    busy = JSONResponse(
        {"detail": f"mdboost is busy: try again in {RETRY_AFTER_S} s"},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
    await busy(scope, receive, send)
