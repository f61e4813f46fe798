"""Guards on every request: security headers, a body-size limit, and who may read or change.

No CORS middleware on purpose: browsers then refuse cross-origin reads of the API.
"""

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.store import db
from app.web import auth, request_db
from app.web.deps import (
    DbDep,
    get_bearer_throttle,
    get_clock,
    get_settings,
    sessions_accepted,
)

# A strict policy: only our own files, no inline script or style, never inside a frame.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class GuardMiddleware:
    """Adds the security headers to every response; reads a request's body in full before the
    app sees it, refusing one over `max_body_bytes` (413, chunked too) or one that does not
    arrive within `body_seconds` (408: a slow client must not hold a worker)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, body_seconds: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            await self._refuse(send_with_headers, 413, self._too_large)
            return
        if declared not in (None, b"0") or b"transfer-encoding" in headers:
            try:
                async with asyncio.timeout(self.body_seconds):
                    body = await self._read_body(receive)
            except BodyTooLarge:
                await self._refuse(send_with_headers, 413, self._too_large)
                return
            except TimeoutError:
                message = f"request body not received within {self.body_seconds:g} s"
                await self._refuse(send_with_headers, 408, message)
                return
            except ClientGone:
                return
            bad_number = _bad_json_number(headers.get(b"content-type", b""), body)
            if bad_number is not None:
                await self._refuse_number(send_with_headers, bad_number)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send_with_headers)

    @property
    def _too_large(self) -> str:
        return f"request body larger than {self.max_body_bytes} bytes"

    async def _read_body(self, receive: Receive) -> bytes:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                raise BodyTooLarge
            if not message.get("more_body", False):
                return bytes(body)

    async def _refuse_number(self, send: Send, bad: "BadNumber") -> None:
        """422 as FastAPI words a validation error, naming the field (loc) and the number."""
        where = ".".join(str(part) for part in bad.loc) or "the body"
        detail = [
            {
                "type": "finite_number",
                "loc": ["body", *bad.loc],
                "msg": f"{where}: {bad.text} is not a finite number within range",
                "input": bad.text,
            }
        ]
        await self._refuse(send, 422, detail)

    async def _refuse(self, send: Send, status: int, message: object) -> None:
        body = json.dumps({"detail": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                # The rest of the body may still come: the connection cannot be reused.
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive() that hands the app the body read already, then waits for a disconnect."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


# Python's json reads NaN, Infinity and 1e400 (as inf) where JSON (RFC 8259 section 6) has no
# such numbers; past the models they reached arithmetic and SQLite as 500s. Integers beyond
# SQLite's 64 bits cannot be stored either.
LARGEST_INTEGER = 2**63 - 1


@dataclass(frozen=True)
class BadNumber:
    loc: tuple[str | int, ...]  # the field's path in the body, e.g. ("targets", 0, "value")
    text: str  # the number as the client wrote it


class _Rejected(str):
    """A number as written, standing in for the value json would have made of it."""


def _finite_float(text: str) -> float | _Rejected:
    value = float(text)
    return value if math.isfinite(value) else _Rejected(text)


def _storable_int(text: str) -> int | _Rejected:
    value = int(text)
    return value if abs(value) <= LARGEST_INTEGER else _Rejected(text)


def _bad_json_number(content_type: bytes, body: bytes) -> BadNumber | None:
    """The first number in a JSON body that is not finite or not storable; None when there is
    none, or when the body is not JSON (FastAPI answers malformed JSON itself)."""
    if b"json" not in content_type.lower():
        return None
    try:
        parsed = json.loads(
            body, parse_constant=_Rejected, parse_float=_finite_float, parse_int=_storable_int
        )
    except (ValueError, RecursionError):
        return None
    return _find_rejected(parsed)


def _find_rejected(parsed: object) -> BadNumber | None:
    """Depth first, in the body's order, without recursion (a body may nest deeply)."""
    stack: list[tuple[tuple[str | int, ...], object]] = [((), parsed)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, _Rejected):
            return BadNumber(loc, str(value))
        children: list[tuple[str | int, object]] = []
        if isinstance(value, dict):
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        stack.extend(((*loc, key), child) for key, child in reversed(children))
    return None


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


@dataclass(frozen=True)
class Principal:
    how: str  # token | session | demo | open
    csrf: str | None = None  # the session's CSRF token, for pages to embed
    token_id: int | None = None  # the page-made API token used, if any
    scope: auth.Scope = "admin"  # a read token may only read


def password_configured(request: Request, conn: DbDep) -> bool:
    settings = get_settings(request)
    return settings.password is not None or auth.stored_password_hash(conn) is not None


SETUP_SEEN_COOKIE = "setup_seen"


def first_visit_before_set_up(request: Request, conn: DbDep) -> bool:
    """A browser's first look at a box with no admin password yet: it goes to the set-up page,
    which the README promises; once seen (a cookie), the owner may just watch."""
    headers = request.headers
    browsing = "text/html" in headers.get("accept", "") and not (
        headers.get("hx-request") or headers.get("authorization")  # a poll, a token's script
    )
    return (
        browsing
        and not request.cookies.get(SETUP_SEEN_COOKIE)
        and not password_configured(request, conn)
    )


LOGIN_SESSION_STATE = "login_session"  # request.state's name for the request's login session


def login_session(request: Request, conn: DbDep) -> auth.LoginSession | None:
    """The login session behind the request's cookie, looked up once per request: the load
    limit's owner lane, the route's dependency and the page ask the same question, and the
    answer is kept in the request's ASGI state (scope["state"], which only the app writes)."""
    state = request.state
    if not hasattr(state, LOGIN_SESSION_STATE):
        setattr(state, LOGIN_SESSION_STATE, _find_login_session(request, conn))
    found: auth.LoginSession | None = getattr(state, LOGIN_SESSION_STATE)
    return found


def _find_login_session(request: Request, conn: db.Connection) -> auth.LoginSession | None:
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    if not cookie or len(cookie) > 200 or not sessions_accepted(request):
        return None
    env_password_set = get_settings(request).password is not None
    session: auth.LoginSession | None = auth.find_session(
        conn, cookie, get_clock(request)(), env_password_set
    )
    return session


def _env_token(secret: SecretStr | None, given: str) -> bool:
    return secret is not None and auth.same_secret(given, secret.get_secret_value())


async def _signed_in(request: Request, conn: DbDep) -> Principal | None:
    """Who is behind this request (an admin, or a read token), or None. Raises 401/403 for a
    wrong token or CSRF."""
    settings = get_settings(request)
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        throttle, client = get_bearer_throttle(request), request.client
        address = client.host if client else "?"
        wait = throttle.wait(address)
        if wait:
            raise HTTPException(
                429,
                detail=f"too many wrong API tokens: try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        token = header[7:].strip()
        if _env_token(settings.api_token, token):
            return Principal("token")
        if _env_token(settings.read_token, token):
            return Principal("token", scope="read")
        found = auth.api_token(conn, token)
        if found is not None:
            return Principal("token", token_id=found[0], scope=found[1])
        throttle.failed(address)
        raise HTTPException(401, detail="invalid API token")
    session = login_session(request, conn)
    if session is not None:
        if request.method not in SAFE_METHODS:
            given = request.headers.get(auth.CSRF_HEADER)
            if given is None and "form" in request.headers.get("content-type", ""):
                given = str((await request.form()).get(auth.CSRF_FIELD, ""))
            if not given or not auth.same_secret(given, session.csrf):
                raise HTTPException(403, detail="missing or wrong CSRF token: reload the page")
        return Principal("session", session.csrf)
    return None


async def _require_signed_in(request: Request, conn: DbDep, open_demo: bool = False) -> Principal:
    principal = await _signed_in(request, conn)
    if principal is None and open_demo:
        # Anyone may tune the open demo, but only from its own page or a tool: not through a
        # page elsewhere that the visitor happens to open (a simple cross-site request).
        same_origin(request)
        return Principal("demo")
    if principal is None:
        raise HTTPException(
            401,
            detail="login required: sign in at /login, or send Authorization: Bearer <token>",
            headers={"WWW-Authenticate": "Bearer", "HX-Redirect": "/login"},
        )
    return principal


def _holds_credentials(request: Request) -> bool:
    """A valid token or login session, checked without raising or counting a failure."""
    header = request.headers.get("authorization", "")
    settings = get_settings(request)
    if header[:7].lower() == "bearer ":
        address = request.client.host if request.client else "?"
        if get_bearer_throttle(request).wait(address):
            return False
        token = header[7:].strip()
        if _env_token(settings.api_token, token) or _env_token(settings.read_token, token):
            return True
        return _or_close(request, auth.api_token(request_db.of(request.scope).get(), token))
    return _or_close(request, login_session(request, request_db.of(request.scope).get()))


def _or_close(request: Request, found: object | None) -> bool:
    """Whether the owner check `found` credentials; when not, the connection it opened is closed
    at once: a request with a made-up cookie or token waits in the queue holding none."""
    if found is None:
        request_db.of(request.scope).close()
    return found is not None


async def carries_credentials(scope: Scope) -> bool:
    """For the load limit's owner lane: does this request carry a valid token or session? The
    route's own dependency still decides what it may do."""
    request = Request(scope)
    if "authorization" not in request.headers and auth.SESSION_COOKIE not in request.cookies:
        return False  # most requests: no database, no thread
    return await asyncio.to_thread(_holds_credentials, request)


async def require_admin(request: Request, conn: DbDep) -> Principal:
    """Notifications, tokens, the account: an admin, even on the open demo."""
    return _admin_only(await _require_signed_in(request, conn))


async def require_tuner(request: Request, conn: DbDep) -> Principal:
    """Boost, revert, auto-tune and schedules: an admin, or anyone on the open demo."""
    open_demo = get_settings(request).demo_open
    return _admin_only(await _require_signed_in(request, conn, open_demo))


def _admin_only(principal: Principal) -> Principal:
    if principal.scope != "admin":
        raise HTTPException(403, detail="this token may only read: changes need an admin token")
    return principal


async def require_reader(request: Request, conn: DbDep) -> Principal:
    if not get_settings(request).read_requires_login:
        return Principal("open")
    return await _require_signed_in(request, conn)


AdminDep = Annotated[Principal, Depends(require_admin)]
TuningChangeDep = Annotated[Principal, Depends(require_tuner)]


def same_origin(request: Request) -> None:
    """Refuse cross-site form posts: a page elsewhere must not flip kernel knobs on the LAN.

    Sec-Fetch-Site decides when the browser sends it (same-origin, or none for a typed URL).
    Otherwise Origin must match Host. Our Referrer-Policy no-referrer makes browsers send
    `Origin: null` even for our own form posts (Fetch standard, "append a request Origin
    header"), so a null Origin passes only with Sec-Fetch-Site: same-origin.
    """
    fetch_site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if fetch_site is not None:
        allowed = fetch_site in ("same-origin", "none")
    else:
        allowed = origin is None or origin.split("://", 1)[-1] == request.headers.get("host")
    if not allowed:
        raise HTTPException(status_code=403, detail="cross-site request refused")
