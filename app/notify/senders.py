"""Send one message to one destination: ntfy, Gotify, a JSON webhook or e-mail (stdlib only).

Every send has a timeout and either returns (the receiver took it: HTTP 2xx, SMTP accepted) or
raises SendFailed with a message that holds no secret of the URL. Each message carries an id
derived from its dedup key where the receiver can use one, so a re-send after a crash (see
outbox.py) can be recognised: ntfy's X-Sequence-ID (ntfy >= 2.16 replaces the notification in
place), the e-mail's Message-ID, the webhook's Idempotency-Key header and "key" field.
"""

import base64
import hashlib
import json
import socket
import ssl
import urllib.error
from dataclasses import asdict, dataclass, field
from email.message import EmailMessage
from email.utils import formatdate
from functools import cache
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from app.notify.destinations import Destination, local_reason, parse, redact

if TYPE_CHECKING:  # smtplib and urllib.request load at the first send: a box that sends none
    # never pays their RSS
    import urllib.request

Priority = Literal["min", "low", "default", "high", "urgent"]
# ntfy's names are its own (docs "Message priority"); Gotify's 0-10 scale: 8+ is high, 4-7 normal.
GOTIFY_PRIORITY = {"min": 1, "low": 3, "default": 5, "high": 8, "urgent": 10}
TIMEOUT_S = 10.0
USER_AGENT = "mdboost"


@dataclass(frozen=True)
class Message:
    """What the owner reads: the same text whichever receiver carries it."""

    key: str  # the dedup key: one event, one message
    kind: str
    title: str
    body: str
    priority: Priority = "default"
    tags: list[str] = field(default_factory=list)  # ntfy tags (emoji short codes)
    click: str | None = None  # the page to open
    array: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Message":
        return cls(**data)

    @property
    def message_id(self) -> str:
        """A stable id from the dedup key, in the character set ntfy allows for sequence ids."""
        return "mdboost-" + hashlib.sha256(self.key.encode()).hexdigest()[:24]


class SendFailed(Exception):
    """The receiver did not take the message; the text is safe to log and show."""


def send(url: str, message: Message, timeout: float = TIMEOUT_S, allow_local: bool = False) -> str:
    """Deliver `message` to the destination `url`: what the receiver answered, in words; raises
    SendFailed (masked) on any failure, and for a host on the NAS itself or its link unless
    `allow_local` (MDBOOST_NOTIFY_ALLOW_LOCAL): checked here, at send time, because a name
    added as a LAN host can resolve there later."""
    dest = parse(url)
    reason = None if allow_local else local_reason(dest.parts.hostname or "")
    if reason:
        raise SendFailed(f"not sent: {reason} (MDBOOST_NOTIFY_ALLOW_LOCAL is off)")
    try:
        if dest.kind == "email":
            _send_email(dest, message, timeout)
            return "the mail server accepted it"
        method, target, headers, body = _http_request(dest, message)
        return f"{dest.kind} answered {_post(method, target, headers, body, timeout)}"
    except SendFailed as error:
        raise SendFailed(redact(str(error), url)) from None
    except (OSError, ValueError) as error:  # smtplib's and ssl's errors are OSErrors
        raise SendFailed(redact(f"{type(error).__name__}: {error}", url)) from None


def _http_request(dest: Destination, message: Message) -> tuple[str, str, dict[str, str], bytes]:
    """Method, URL, headers and body as the receiver's documentation gives them."""
    parts = dest.parts
    scheme = "https" if dest.tls else "http"
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    headers = {"User-Agent": USER_AGENT}
    if dest.kind == "ntfy":
        # docs.ntfy.sh/publish: POST the text to /<topic>; Title, Priority, Tags, Click headers;
        # Authorization: Bearer <token> or Basic; non-ASCII headers as RFC 2047 encoded words.
        headers |= {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": _header_text(message.title),
            "Priority": message.priority,
            "X-Sequence-ID": message.message_id,
        }
        if message.tags:
            headers["Tags"] = ",".join(message.tags)
        if message.click:
            headers["Click"] = message.click
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        token = dest.option("token") or (password if not user else None)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif user and password:
            pair = f"{user}:{password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return "POST", f"{scheme}://{netloc}{parts.path}", headers, message.body.encode()
    if dest.kind == "gotify":
        # gotify.net/docs/pushmsg: POST /message with the app token (X-Gotify-Key header keeps it
        # out of access logs); JSON title, message, priority; extras client::notification click.
        *subpath, token = [p for p in parts.path.split("/") if p]
        prefix = "".join(f"/{p}" for p in subpath)
        headers |= {"Content-Type": "application/json", "X-Gotify-Key": token}
        payload: dict[str, Any] = {
            "title": message.title,
            "message": message.body,
            "priority": GOTIFY_PRIORITY[message.priority],
        }
        if message.click:
            payload["extras"] = {"client::notification": {"click": {"url": message.click}}}
        return "POST", f"{scheme}://{netloc}{prefix}/message", headers, json.dumps(payload).encode()
    # A generic webhook: the URL as given, the message as JSON.
    headers |= {"Content-Type": "application/json", "Idempotency-Key": message.message_id}
    target = parts.geturl()
    return "POST", target, headers, json.dumps(message.to_json()).encode()


def _header_text(text: str) -> str:
    """ntfy reads RFC 2047 encoded words; HTTP headers themselves are Latin-1 at best."""
    if text.isascii():
        return text
    return "=?UTF-8?B?" + base64.b64encode(text.encode()).decode() + "?="


@cache
def _opener() -> "urllib.request.OpenerDirector":
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        """A 3xx is the receiver's answer, never followed: urllib re-sent the Authorization and
        X-Gotify-Key headers to whatever origin a receiver named, ftp:// included."""

        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirects)


def _post(method: str, url: str, headers: dict[str, str], body: bytes, timeout: float) -> str:
    """The receiver's answer: "HTTP 200 OK"."""
    import urllib.request

    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with _opener().open(request, timeout=timeout) as response:
            response.read(65536)
            return f"HTTP {response.status} {response.reason}"
    except urllib.error.HTTPError as error:
        moved = " (a redirect: not followed)" if 300 <= error.code < 400 else ""
        raise SendFailed(f"HTTP {error.code} {error.reason}{moved}") from None
    except urllib.error.URLError as error:
        raise SendFailed(f"cannot reach the receiver: {error.reason}") from None
    except TimeoutError:
        raise SendFailed(f"no answer within {timeout:g} s") from None


def _send_email(dest: Destination, message: Message, timeout: float) -> None:
    import smtplib

    parts = dest.parts
    host = parts.hostname or ""
    to = (dest.option("to") or "").split(",")
    sender = dest.option("from") or f"mdboost@{socket.gethostname()}"
    mail = EmailMessage()
    mail["Subject"] = message.title
    mail["From"] = sender
    mail["To"] = ", ".join(to)
    mail["Date"] = formatdate(localtime=True)
    # Stable per event: a re-send after a crash carries the same Message-ID.
    mail["Message-ID"] = f"<{message.message_id}@mdboost>"
    body = message.body + (f"\n\n{message.click}\n" if message.click else "\n")
    mail.set_content(body)
    context = ssl.create_default_context()
    smtp: smtplib.SMTP
    if dest.tls:
        smtp = smtplib.SMTP_SSL(host, parts.port or 465, timeout=timeout, context=context)
    else:
        smtp = smtplib.SMTP(host, parts.port or 587, timeout=timeout)
    with smtp:
        smtp.ehlo()
        if not dest.tls:
            if smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
            elif parts.password is not None:
                raise SendFailed(
                    "the server offers no STARTTLS: refusing to send the password in clear "
                    "(use smtps:// or a server with STARTTLS)"
                )
        if parts.username:
            smtp.login(unquote(parts.username), unquote(parts.password or ""))
        smtp.send_message(mail)
