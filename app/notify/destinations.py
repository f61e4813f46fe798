"""Destination URLs: parse and check them, mask them for display, keep the list in SQLite.

A URL carries its secrets (an ntfy topic is itself a password, a Gotify app token, an SMTP
password), so nothing outside this module and the senders ever sees more than `label()`:
scheme, host and the last four characters.
"""

import base64
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Literal
from urllib.parse import SplitResult, parse_qs, unquote, unquote_plus, urlsplit

from app.store import db
from app.store import notify as stored

Kind = Literal["ntfy", "gotify", "webhook", "email"]
SCHEMES: dict[str, tuple[Kind, bool]] = {  # scheme -> (kind, TLS)
    "ntfy": ("ntfy", True),
    "ntfy+https": ("ntfy", True),
    "ntfy+http": ("ntfy", False),
    "gotify": ("gotify", True),
    "gotify+https": ("gotify", True),
    "gotify+http": ("gotify", False),
    "https": ("webhook", True),
    "http": ("webhook", False),
    "smtps": ("email", True),
    "smtp": ("email", False),  # STARTTLS when the server offers it (required with a password)
}
# ntfy's topic rule (docs "Picking a topic"): letters, numbers, _ and -, up to 64 characters.
NTFY_TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")
ADDRESS = re.compile(r"[^@\s,;<>]+@[^@\s,;<>]+")
MAX_URL = 2000
SPLIT = re.compile(r"[\s,]+")
# A decoded %0d%0a in a token would end an HTTP header and start another.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class BadDestination(ValueError):
    """A URL that cannot be used; the message never repeats the URL's secrets."""


class LocalDestination(BadDestination):
    """A URL whose host is the NAS itself or its link: refused unless MDBOOST_NOTIFY_ALLOW_LOCAL."""


@dataclass(frozen=True)
class Destination:
    kind: Kind
    tls: bool
    parts: SplitResult
    query: dict[str, list[str]]

    def option(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None


def split_urls(text: str) -> list[str]:
    """MDBOOST_NOTIFY: URLs separated by spaces, commas or newlines (no URL form needs them)."""
    return [url for url in SPLIT.split(text) if url]


def parse(url: str) -> Destination:
    if len(url) > MAX_URL:
        raise BadDestination(f"a destination URL is at most {MAX_URL} characters")
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise BadDestination("not a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise BadDestination(f"unknown scheme {scheme[:20]!r}: use one of {known}")
    if not parts.hostname:
        raise BadDestination(f"{scheme}:// needs a host")
    kind, tls = SCHEMES[scheme]
    path = [p for p in parts.path.split("/") if p]
    if kind == "webhook" and _ntfy_host(parts.hostname) and len(path) == 1:
        kind = "ntfy"  # ntfy's own https://ntfy.sh/topic form: its topic, not a JSON webhook
    dest = Destination(kind, tls, parts, parse_qs(parts.query))
    decoded = [unquote(parts.username or ""), unquote(parts.password or ""), unquote(parts.path)]
    if any(CONTROL.search(v) for v in [*decoded, *(v for vs in dest.query.values() for v in vs)]):
        raise BadDestination("a URL may not hold control characters, encoded (%0d%0a) or not")
    if kind == "ntfy" and (len(path) != 1 or not NTFY_TOPIC.fullmatch(path[0])):
        raise BadDestination("ntfy:// needs one topic: ntfy://host/topic ([-_A-Za-z0-9], <= 64)")
    if kind == "gotify" and not path:
        raise BadDestination("gotify:// needs the application token: gotify://host/TOKEN")
    if kind == "email":
        to = dest.option("to")
        if not to or not all(ADDRESS.fullmatch(a) for a in to.split(",")):
            raise BadDestination("smtp:// needs ?to=name@example.com (comma-separated for more)")
        sender = dest.option("from")
        if sender is not None and not ADDRESS.fullmatch(sender):
            raise BadDestination("smtp:// ?from= is not an e-mail address")
    return dest


def _ntfy_host(host: str | None) -> bool:
    """ntfy.sh, or a server named like one (ntfy.example.org): the URL its app shows to copy
    is https://host/topic, which an owner pastes as it is."""
    name = (host or "").lower()
    return name == "ntfy.sh" or name.startswith("ntfy.")


# 0.0.0.0/8 is "this network": Linux delivers a connection to 0.x.y.z to the NAS itself.
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


def local_reason(host: str) -> str | None:
    """Why a message to `host` would stay on the NAS or its link (loopback, link-local such as
    169.254.169.254's cloud metadata, the unspecified address, one of the NAS's own addresses),
    or None. A name counts by every address it resolves to now; one that does not resolve is
    not local (sending to it fails on its own). A destination there would make 'test' a port
    probe from inside the NAS."""
    try:
        addresses = [ipaddress.ip_address(host)]
        named = False
    except ValueError:
        try:
            found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return None
        addresses = [ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in found]
        named = True
    for address in addresses:
        kind = _local_kind(address)
        if kind:
            return f"{host} resolves to {address}, {kind}" if named else f"{host} is {kind}"
    return None


def _local_kind(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "a loopback address (the NAS itself)"
    if address.is_link_local:
        return "a link-local address (cloud metadata and the like)"
    if address.is_unspecified or address in THIS_NETWORK:
        return "the unspecified address (the NAS itself)"
    if _own_address(address):
        return "one of this NAS's own addresses"
    return None


def _own_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The kernel lets a socket bind only to an address of this machine: that answers without
    listing interfaces."""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((str(address), 0))
        except OSError:
            return False
    return True


def refuse_local(url: str) -> None:
    """Raise LocalDestination when `url`'s host is local (see local_reason)."""
    host = urlsplit(url.strip()).hostname or ""
    reason = local_reason(host)
    if reason:
        raise LocalDestination(
            f"{label(url)} is refused: {reason}. Set MDBOOST_NOTIFY_ALLOW_LOCAL=true to send "
            "to a receiver on the NAS itself (ntfy or Gotify running on it)"
        )


def label(url: str) -> str:
    """The only form of a URL that is ever shown or logged: scheme, host, the last 4 chars."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unreadable URL)"
    rest = url.strip().split(parts.netloc, 1)[-1] if parts.netloc else ""
    tail = f"/…{rest[-4:]}" if len(rest) > 4 else ("/…" if rest.strip("/") else "")
    return f"{parts.scheme.lower()}://{host}{port}{tail}"


def redact(text: str, url: str) -> str:
    """`text` (an error message) with every secret part of `url` replaced by '…', in every form
    it can take there: as written, percent-decoded, escaped as Python shows bytes and strings in
    an exception (b'Bearer tk\\r\\n…'), and as a Basic credential."""
    parts = urlsplit(url.strip())
    secrets = [url.strip(), parts.netloc, parts.path, parts.query, parts.password, parts.username]
    secrets += [seg for seg in parts.path.split("/") if seg]
    secrets += [pair.partition("=")[2] for pair in parts.query.split("&")]  # as written
    for value in parse_qs(parts.query).values():
        secrets += value
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    if user or password:
        secrets.append(base64.b64encode(f"{user}:{password}".encode()).decode())
    forms = set()
    for secret in filter(None, secrets):
        for decoded in (secret, unquote(secret), unquote_plus(secret)):
            forms |= {decoded, decoded.encode("unicode_escape").decode(), repr(decoded)[1:-1]}
            forms.add(repr(decoded.encode("utf-8", "replace"))[2:-1])
    for form in sorted((f for f in forms if len(f) >= 3), key=len, reverse=True):
        text = text.replace(form, "…")
    return text


# ---- the stored list
def sync_env(conn: db.Connection, urls: list[str], now: float) -> list[str]:
    """Make the 'env' destinations match MDBOOST_NOTIFY; returns a problem per unusable URL."""
    problems, usable = [], {}
    for url in urls:
        try:
            parse(url)
            usable[url] = label(url)
        except BadDestination as error:
            problems.append(f"MDBOOST_NOTIFY {label(url)}: {error}")
    stored.sync_env_destinations(conn, usable, now)
    return problems


def add(
    conn: db.Connection,
    url: str,
    now: float,
    page_url: str | None = None,
    allow_local: bool = False,
) -> int:
    """Add a destination from the page, with the address the owner opened the page at (the link
    in its messages); raises BadDestination for a URL that cannot be used, LocalDestination for
    one on the NAS itself unless `allow_local` (MDBOOST_NOTIFY_ALLOW_LOCAL)."""
    url = url.strip()
    parse(url)
    if not allow_local:
        refuse_local(url)
    return stored.add_destination(conn, url, label(url), now, page_url)
