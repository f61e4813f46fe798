"""The account page's notification destinations: add, list (masked), remove, send a test."""

import logging
import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.notify import destinations, messages, senders
from app.store import notify as notify_store
from app.web import security
from app.web.account import render_account
from app.web.deps import ClockDep, DbDep, RowId, SettingsDep

log = logging.getLogger(__name__)

router = APIRouter(
    prefix="/account/notify",
    tags=["notify"],
    include_in_schema=False,
    dependencies=[Depends(security.same_origin)],
)


@router.post("", response_class=HTMLResponse)
def add_destination(
    request: Request,
    conn: DbDep,
    clock: ClockDep,
    settings: SettingsDep,
    admin: security.AdminDep,
    url: Annotated[str, Form(min_length=1, max_length=destinations.MAX_URL)],
) -> Response:
    try:
        # The address the owner uses now: the link in this destination's messages.
        page = str(request.base_url)
        destinations.add(conn, url, clock(), page, settings.notify_allow_local)
    except destinations.BadDestination as error:
        response = render_account(request, conn, admin, notify_error=str(error))
        # A well-formed URL refused for where it points, or one that is not a destination.
        local = isinstance(error, destinations.LocalDestination)
        response.status_code = 422 if local else 400
        return response
    return RedirectResponse("/account#notify", status_code=303)


@router.post("/{destination_id}/remove")
def remove_destination(
    destination_id: RowId, conn: DbDep, clock: ClockDep, admin: security.AdminDep
) -> Response:
    notify_store.remove_page_destination(conn, destination_id, clock())
    return RedirectResponse("/account#notify", status_code=303)


@router.post("/{destination_id}/test", response_class=HTMLResponse)
def send_test(
    request: Request,
    destination_id: RowId,
    conn: DbDep,
    settings: SettingsDep,
    admin: security.AdminDep,
) -> Response:
    """Send a test message now (not through the outbox): the answer says only sent or not sent.
    What answered (a status, a body, an error) goes to the log: on the page it would tell an
    admin what listens at an address the NAS can reach and the browser cannot."""
    url = notify_store.destination_url(conn, destination_id)
    if url is None:
        return RedirectResponse("/account#notify", status_code=303)
    name = destinations.label(url)
    # The link in it: MDBOOST_PUBLIC_URL, else the address the owner opened this page at.
    page = settings.public_url or str(request.base_url)
    probe = messages.probe_message(page, f"test:{secrets.token_hex(8)}")
    notify_store.set_page_url(conn, destination_id, str(request.base_url))
    try:
        answer = senders.send(
            url, probe, settings.notify_timeout_seconds, settings.notify_allow_local
        )
        log.info("notify: test message to %s sent: %s", name, answer)
        result = f"Test message sent to {name}. Its link opens {page}"
    except senders.SendFailed as error:
        log.warning("notify: test message to %s not sent: %s", name, error)
        result = f"Test message to {name} not sent: the log says why."
    return render_account(request, conn, admin, notify_result=result)
