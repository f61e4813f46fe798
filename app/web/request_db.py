"""Each request's own database connection, opened at its first use and closed once the answer is
sent: the load limit's owner check (app/web/security.py) and the route's dependencies share it,
so a signed-in owner's request opens one connection, not two."""

from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from app.store import db

STATE_KEY = "request_connection"  # its name in the request's ASGI state (scope["state"])


class RequestConnection:
    """A connection opened on first use by whichever thread asks first; a request's work runs
    one step at a time, so no two threads use it at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: db.Connection | None = None

    def get(self) -> db.Connection:
        if self.conn is None:
            self.conn = db.connect_for_request(self.path)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            conn.close()


def of(scope: Scope) -> RequestConnection:
    """The request's connection, as RequestConnections put it into its state."""
    found: RequestConnection = scope["state"][STATE_KEY]
    return found


class RequestConnections:
    """Gives each HTTP request its RequestConnection and closes it once the app has answered.
    It closes on the event loop: a close is quick, and an await here could be cut short by the
    cancellation of a request whose client went away, leaving the connection open."""

    def __init__(self, app: ASGIApp, path: Path) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = RequestConnection(self.path)
        scope.setdefault("state", {})[STATE_KEY] = connection
        try:
            await self.app(scope, receive, send)
        finally:
            connection.close()
