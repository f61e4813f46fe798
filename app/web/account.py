"""The account page: what it shows, for the routers that answer with it."""

from fastapi import Request
from fastapi.responses import HTMLResponse

from app.store import db
from app.store import notify as notify_store
from app.web import auth
from app.web.deps import get_settings
from app.web.security import Principal
from app.web.templating import render_page


def render_account(
    request: Request,
    conn: db.Connection,
    admin: Principal,
    new_token: str | None = None,
    notify_error: str | None = None,
    notify_result: str | None = None,
) -> HTMLResponse:
    """`new_token`: a token just made, shown once; `notify_error`, `notify_result`: what a
    destination's form or its test message came to, in words."""
    context = {
        "tokens": auth.list_api_tokens(conn),
        "new_token": new_token,
        "principal": admin,
        "destinations": notify_store.destination_statuses(conn),
        "from_env": get_settings(request).notify is not None,
        "notify_error": notify_error,
        "notify_result": notify_result,
    }
    return render_page(request, "account.html", context)
