"""Connections cannot hold the server: a head deadline, a deadline for answers nobody reads,
a cap per client address, and room made for a new client at the expense of the heaviest one.

uvicorn has no timeout for an unfinished request head, and its `limit_concurrency` counts open
sockets, so 260 sockets that sent `GET / HTTP/1.1\\r\\nHost: x\\r\\n` and then nothing made
every request, /healthz included, answer 503 while they were held; 16 addresses trickling 16
request bodies each did the same. When every connection is taken, a new one now pushes out one
of the address holding the most (a head-less one first), unless that is its own address. Behind a
trusted proxy a connection counts for the client its last request was forwarded for. This is
uvicorn's own h11 protocol with those rules added, passed to uvicorn.run(http=...).
"""

import asyncio
import contextlib
import time
from collections import Counter
from email.utils import formatdate
from types import FrameType
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.web.proxy import TrustedProxies

WRITE_STALL_S = 20.0  # an answer the client reads none of for this long: the connection closes
HEAD_TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


class ConnectionRules:
    """The limits, and every open connection in the order it was opened (shared by all)."""

    def __init__(
        self,
        head_seconds: float,
        max_connections: int,
        per_client: int,
        proxies: TrustedProxies,
    ) -> None:
        self.head_seconds = head_seconds
        self.max_connections = max_connections
        self.per_client = per_client
        self.proxies = proxies  # a reverse proxy carries many clients: no per-address cap
        self.open: dict[GuardedH11Protocol, str] = {}  # connection -> client address

    def protocol(self) -> type["GuardedH11Protocol"]:
        """The protocol class for uvicorn.run(http=...), bound to these rules."""
        return type("GuardedH11Protocol", (GuardedH11Protocol,), {"rules": self})

    def admit(self, new: "GuardedH11Protocol", address: str) -> bool:
        """Count `new` in; False when its address already has its share of connections, or
        when every connection is taken and its address holds the most."""
        if not self.proxies.trusts(address):
            same = sum(1 for a in self.open.values() if a == address)
            if same >= self.per_client:
                return False
        self.open[new] = address
        while len(self.open) > self.max_connections:
            held = Counter(self.open.values())
            heaviest = max(held, key=lambda a: held[a])
            if held[heaviest] <= held[address]:
                heaviest = address  # its own address holds the most: only its idle ones go
            mine = [c for c in self.open if self.open[c] == heaviest and c is not new]
            idle = [c for c in mine if c.awaiting_head()]
            if idle:
                idle[0].drop()
            elif heaviest != address and mine:  # mid-request: no answer can follow on it
                self.forget(mine[0])
                mine[0].transport.abort()
            else:
                del self.open[new]
                return False
        return True

    def forwarded(self, connection: "GuardedH11Protocol", client: str) -> None:
        """A trusted proxy's connection now carries `client`'s request: count it for them."""
        if connection in self.open:
            self.open[connection] = client

    def forget(self, connection: "GuardedH11Protocol") -> None:
        self.open.pop(connection, None)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and the rules above."""

    rules: ConnectionRules

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_deadline: asyncio.TimerHandle | None = None
        self.write_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else ""
        if not self.rules.admit(self, address):
            self.transport.abort()
            return
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        if self.write_deadline is not None:
            self.write_deadline.cancel()
        self.rules.forget(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        _date_now(self.server_state, self.config)  # before h11 turns `data` into a request
        super().data_received(data)
        if not self.awaiting_head():
            self._disarm_head_deadline()
            peer = self.client[0] if self.client else ""
            if self.rules.proxies.trusts(peer):
                forwarded = b",".join(v for n, v in self.headers if n == b"x-forwarded-for")
                client = self.rules.proxies.client(peer, forwarded.decode("latin-1"))
                self.rules.forwarded(self, client)
        elif self.head_deadline is None and not self.transport.is_closing():
            self._arm_head_deadline()  # the first bytes of a keep-alive connection's next head

    def pause_writing(self) -> None:
        """The client reads no more of the answer for now: it has WRITE_STALL_S to resume."""
        super().pause_writing()
        if self.write_deadline is None:
            self.write_deadline = self.loop.call_later(WRITE_STALL_S, self.transport.abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.write_deadline is not None:
            self.write_deadline.cancel()
            self.write_deadline = None

    def awaiting_head(self) -> bool:
        """No request in flight: before a head has arrived, or idle between keep-alive ones."""
        return self.conn.their_state is h11.IDLE

    def drop(self) -> None:
        """Close at once with a 408: the head came too late, or room is needed for another."""
        self._disarm_head_deadline()
        self.rules.forget(self)
        if not self.transport.is_closing():
            self.transport.write(HEAD_TIMEOUT_ANSWER)
            self.transport.close()

    def _arm_head_deadline(self) -> None:
        self.head_deadline = self.loop.call_later(self.rules.head_seconds, self._head_late)

    def _disarm_head_deadline(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def _head_late(self) -> None:
        self.head_deadline = None
        if self.awaiting_head():
            self.drop()


class QuietServer(uvicorn.Server):
    """uvicorn's Server, without its main loop's wake-up every 0.1 s (600 a minute of an idle
    NAS daemon, most of its wake-ups). That loop refreshed the Date header and looked
    for a stop; here a stop signal wakes the loop itself, and the Date header is refreshed as a
    request's bytes arrive (GuardedH11Protocol), so nothing ticks while no one asks."""

    woken: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None

    async def main_loop(self) -> None:
        self.loop, self.woken = asyncio.get_running_loop(), asyncio.Event()
        while not await self.on_tick(0):  # counter 0: the Date header as uvicorn sets it
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), timeout=STOP_CHECK_S)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self.loop is not None and self.woken is not None:
            self.loop.call_soon_threadsafe(self.woken.set)


STOP_CHECK_S = 3600.0  # a safety net only: a signal wakes the loop at once


_date: list[Any] = [None, []]  # the second the Date header was made for, and the headers


def _date_now(state: Any, config: Any) -> None:
    """uvicorn's default headers with this second's Date (RFC 9110 asks an origin server for it)."""
    second = int(time.time())
    if _date[0] != second:
        date = [(b"date", formatdate(second, usegmt=True).encode())] if config.date_header else []
        _date[:] = [second, date + config.encoded_headers]
    state.default_headers = _date[1]
