"""Every error is JSON for the API and a readable page for people; never a stack trace."""

import html
import logging
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import fastapi
from fastapi import FastAPI, Request
from fastapi.exception_handlers import (
    http_exception_handler,
    request_validation_exception_handler,
)
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException

from app.store import db
from app.tuning.errors import TuningError

log = logging.getLogger(__name__)


def _wants_page(request: Request) -> bool:
    return not request.url.path.startswith("/api/") and "text/html" in request.headers.get(
        "accept", ""
    )


def error_page(status: int, message: str) -> HTMLResponse:
    """A readable page for people: the status and the message, escaped."""
    text = html.escape(message)
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f'<title>mdboost: {status}</title><link rel="stylesheet" href="/static/app.css"></head>'
        f'<body><main class="narrow"><h1>{status}</h1><p class="error" role="alert">{text}</p>'
        '<p><a class="button secondary" href="/">Back to the arrays</a></p></main></body></html>'
    )
    return HTMLResponse(body, status_code=status)


def message_of(detail: Any) -> str:
    """The human part of an HTTPException's detail: its "message" when it has one."""
    if isinstance(detail, dict):
        return str(detail.get("message", detail))
    return str(detail)


async def on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if _wants_page(request) and not request.headers.get("hx-request"):
        if error.status_code == 401:
            # Back to this page after signing in; a form post's page is the dashboard.
            back = request.url.path if request.method == "GET" else "/"
            return RedirectResponse(f"/login?next={quote(back)}", status_code=303)
        return error_page(error.status_code, message_of(error.detail))
    return await http_exception_handler(request, error)


async def on_validation_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    if _wants_page(request) and not request.headers.get("hx-request"):
        return error_page(422, "; ".join(str(e.get("msg", e)) for e in error.errors()))
    return await request_validation_exception_handler(request, error)


async def on_crash(request: Request, error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    message = "internal error: the details are in mdboost's log"
    if _wants_page(request):
        return error_page(500, message)
    return Response(f'{{"detail": "{message}"}}', status_code=500, media_type="application/json")


# What a change refused for a full disk answers: each route writes in one transaction, which
# SQLite rolls back whole, so nothing of it was made.
DISK_FULL = (
    "the disk holding the database is full: this change cannot be recorded, so it was not "
    "made. Free some space on that disk and try again"
)
DISK_FULL_RETRY_S = 60


async def on_database_error(request: Request, error: Exception) -> Response:
    """A full disk is the owner's to fix, not mdboost's fault: a 503 saying so, never a 500;
    any other database error is a crash."""
    if not db.disk_full(error):
        return await on_crash(request, error)
    log.warning("%s %s refused: the database's disk is full", request.method, request.url.path)
    refused = fastapi.HTTPException(
        503, detail={"message": DISK_FULL}, headers={"Retry-After": str(DISK_FULL_RETRY_S)}
    )
    return await on_http_error(request, refused)


def http_error(error: TuningError) -> fastapi.HTTPException:
    """A tuning error as the HTTP answer its class names (app/tuning/errors.py)."""
    retry = error.retry_after_s
    headers = {"Retry-After": str(retry)} if retry is not None else None
    return fastapi.HTTPException(error.status, detail=error.detail(), headers=headers)


T = TypeVar("T")


def call_tuning(action: Callable[..., T], *args: Any) -> T:
    """Run one tuning action; its errors become JSON with the right status, never a 500."""
    try:
        return action(*args)
    except TuningError as error:
        raise http_error(error) from None


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(db.Error, on_database_error)
    app.add_exception_handler(Exception, on_crash)
