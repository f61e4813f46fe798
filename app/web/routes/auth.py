"""Login, logout, the one-time set-up of the admin password, and API tokens."""

from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from app.config import MIN_PASSWORD_LENGTH
from app.shapes import Ok
from app.shapes.tuning import NewTokenAnswer, Tokens
from app.web import auth
from app.web.account import render_account
from app.web.deps import ClockDep, DbDep, LoginThrottleDep, RowId, get_settings
from app.web.security import (
    SETUP_SEEN_COOKIE,
    AdminDep,
    login_session,
    password_configured,
    same_origin,
)
from app.web.templating import render_page

router = APIRouter(tags=["auth"])

PasswordField = Annotated[str, Form(max_length=1024)]
# Form posts from a page on another site are refused: it must not claim the one-time set-up,
# sign the admin in or out, or make tokens.
SAME_ORIGIN = [Depends(same_origin)]
YEAR_S = 365 * 86400
# Where to go after signing in: a path on this site only (never //host or a scheme).
Next = Annotated[str, Form(max_length=200)]


def _local(path: str | None) -> str:
    """`path` when it stays on this site, else the dashboard (no open redirect)."""
    if not path or not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    return path if path.isprintable() and len(path) <= 200 else "/"


def _login_form(request: Request, conn: DbDep, error: str | None, next_path: str) -> Response:
    expired = request.cookies.get(auth.SESSION_COOKIE) and login_session(request, conn) is None
    context = {
        "error": error,
        "next": _local(next_path),
        "expired": bool(expired),
        "demo_password_in_log": get_settings(request).demo_open,
    }
    return render_page(request, "login.html", context)


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _password_ok(request: Request, conn: DbDep, password: str) -> bool:
    configured = get_settings(request).password
    if configured is not None:
        # Hash both sides first so the comparison takes the same time whatever the lengths.
        return auth.same_secret(
            auth.token_hash(password), auth.token_hash(configured.get_secret_value())
        )
    stored = auth.stored_password_hash(conn)
    return stored is not None and auth.verify_password(password, stored)


def _logged_in(
    request: Request, conn: DbDep, clock: ClockDep, next_path: str = "/"
) -> RedirectResponse:
    fingerprint = auth.password_fingerprint(conn, get_settings(request).password is not None)
    session = auth.create_session(conn, clock(), fingerprint)
    response = RedirectResponse(_local(next_path), status_code=303)
    response.set_cookie(
        auth.SESSION_COOKIE,
        session.token,
        max_age=auth.SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.get("/login", response_class=HTMLResponse, include_in_schema=False)
def login_page(request: Request, conn: DbDep, next: str = "/") -> Response:
    """The sign-in form; `next` is where the owner was (the boost they tapped, say)."""
    if not password_configured(request, conn):
        return RedirectResponse("/setup", status_code=303)
    return _login_form(request, conn, None, next)


@router.post(
    "/login", response_class=HTMLResponse, include_in_schema=False, dependencies=SAME_ORIGIN
)
def login(
    request: Request,
    conn: DbDep,
    clock: ClockDep,
    throttle: LoginThrottleDep,
    password: PasswordField,
    next: Next = "/",
) -> Response:
    wait = throttle.reserve(_client(request))
    if wait:
        response = _login_form(request, conn, f"Too many attempts: try again in {wait} s.", next)
        response.status_code = 429
        response.headers["Retry-After"] = str(wait)
        return response
    if not _password_ok(request, conn, password):
        response = _login_form(request, conn, "Wrong password.", next)
        response.status_code = 401
        return response
    throttle.succeeded(_client(request))
    return _logged_in(request, conn, clock, next)


@router.post("/logout", include_in_schema=False, dependencies=SAME_ORIGIN)
def logout(request: Request, conn: DbDep) -> Response:
    cookie = request.cookies.get(auth.SESSION_COOKIE)
    if cookie:
        auth.end_session(conn, cookie)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(auth.SESSION_COOKIE, path="/")
    return response


@router.post("/account/sign-out-everywhere", include_in_schema=False, dependencies=SAME_ORIGIN)
def sign_out_everywhere(conn: DbDep, admin: AdminDep) -> Response:
    """End every login session, this one too (after a lost phone, say); API tokens stay."""
    auth.end_every_session(conn)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(auth.SESSION_COOKIE, path="/")
    return response


@router.get("/setup", response_class=HTMLResponse, include_in_schema=False)
def setup_page(request: Request, conn: DbDep) -> Response:
    if password_configured(request, conn):
        return RedirectResponse("/login", status_code=303)
    response = render_page(request, "setup.html", {"error": None})
    response.set_cookie(
        SETUP_SEEN_COOKIE, "1", max_age=YEAR_S, httponly=True, samesite="strict", path="/"
    )
    return response


@router.post(
    "/setup", response_class=HTMLResponse, include_in_schema=False, dependencies=SAME_ORIGIN
)
def setup(
    request: Request, conn: DbDep, clock: ClockDep, password: PasswordField, confirm: PasswordField
) -> Response:
    error = None
    if password_configured(request, conn):
        error = "A password is already set: sign in instead."
    elif len(password) < MIN_PASSWORD_LENGTH:
        error = f"Use at least {MIN_PASSWORD_LENGTH} characters."
    elif password != confirm:
        error = "The two passwords differ."
    elif not auth.set_password_once(conn, password, clock()):
        error = "A password was set a moment ago: sign in instead."
    if error:
        response = render_page(request, "setup.html", {"error": error})
        response.status_code = 400
        return response
    return _logged_in(request, conn, clock)


@router.get("/account", response_class=HTMLResponse, include_in_schema=False)
def account_page(request: Request, conn: DbDep, admin: AdminDep) -> Response:
    return render_account(request, conn, admin)


@router.post(
    "/account/tokens",
    response_class=HTMLResponse,
    include_in_schema=False,
    dependencies=SAME_ORIGIN,
)
def account_new_token(
    request: Request,
    conn: DbDep,
    clock: ClockDep,
    admin: AdminDep,
    name: Annotated[str, Form(min_length=1, max_length=60)],
    scope: Annotated[auth.Scope, Form()] = "read",
) -> Response:
    token = auth.create_api_token(conn, name, clock(), admin.token_id, scope)
    return render_account(request, conn, admin, new_token=token)


@router.post("/account/tokens/{token_id}/revoke", include_in_schema=False, dependencies=SAME_ORIGIN)
def account_revoke_token(
    token_id: RowId, conn: DbDep, clock: ClockDep, admin: AdminDep
) -> Response:
    auth.revoke_api_token(conn, token_id, clock())
    return RedirectResponse("/account", status_code=303)


class NewToken(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=60)
    # read: GET API, /metrics and the page only (for Prometheus); admin: every change too.
    scope: auth.Scope = "admin"


@router.get("/api/tokens")
def list_tokens(conn: DbDep, admin: AdminDep) -> Tokens:
    return Tokens(tokens=auth.list_api_tokens(conn))


@router.post("/api/tokens")
def create_token(body: NewToken, conn: DbDep, clock: ClockDep, admin: AdminDep) -> NewTokenAnswer:
    """Create an API token; it is shown only in this answer (only its hash is kept). A token
    made with another page-made token is revoked with it."""
    token = auth.create_api_token(conn, body.name, clock(), admin.token_id, body.scope)
    return NewTokenAnswer(name=body.name, scope=body.scope, token=token)


@router.delete("/api/tokens/{token_id}")
def revoke_token(token_id: RowId, conn: DbDep, clock: ClockDep, admin: AdminDep) -> Ok:
    if not auth.revoke_api_token(conn, token_id, clock()):
        raise HTTPException(404, detail=f"no active token {token_id}")
    return Ok()
