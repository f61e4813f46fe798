"""Load shedding: a few requests at a time, a short queue, and 503 with Retry-After beyond it.

Each request renders in a worker thread with its own database connection; 200 clients on `/`
grew the server from 58 to 172 MB (issue 13), and a NAS has little RAM. Overload now costs a
503, not memory. Health checks and static files pass: they are cheap, and a page that did load
must not lose its stylesheet.
"""

import asyncio

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

RETRY_AFTER_S = 2
UNLIMITED_PATHS = ("/healthz", "/static/")


class LoadLimit:
    """At most `max_active` requests in the app and `max_waiting` queued; the rest get 503."""

    def __init__(self, app: ASGIApp, max_active: int, max_waiting: int) -> None:
        self.app = app
        self.max_waiting = max_waiting
        self.slots = asyncio.Semaphore(max_active)
        self.waiting = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(UNLIMITED_PATHS):
            await self.app(scope, receive, send)
            return
        if self.slots.locked() and self.waiting >= self.max_waiting:
            busy = JSONResponse(
                {"detail": f"mdboost is busy: try again in {RETRY_AFTER_S} s"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
            await busy(scope, receive, send)
            return
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.slots.release()
