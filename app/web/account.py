"""The account page: what it shows, for the routers that answer with it."""

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from app.store import db
from app.store import notify as notify_store
from app.web import auth
from app.web.deps import get_settings
from app.web.security import Principal
from app.web.templating import render_page


def render_account(
    request: Request, conn: db.Connection, admin: Principal, **extra: Any
) -> HTMLResponse:
    context = {
        "tokens": auth.list_api_tokens(conn),
        "new_token": None,
        "principal": admin,
        "destinations": notify_store.destination_statuses(conn),
        "from_env": get_settings(request).notify is not None,
        "notify_error": None,
        "notify_result": None,
        **extra,
    }
    return render_page(request, "account.html", context)
