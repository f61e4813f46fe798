"""The Host allow-list: a guard against DNS rebinding.

A page on evil.example can point its own name at the NAS's LAN address; the browser then sends
`Host: evil.example` and treats the answers as same-origin, so the page could read the API and
pass the same-origin check. mdboost answers only to names that cannot be rebound like that: IP
literals, localhost, this machine's own names, single-label names such as `diskstation` (the
NAS's own name on the LAN; public DNS holds no dotless names, so no outside page owns one), mDNS
`*.local`, the suffixes home routers hand out that public DNS does not delegate (`*.home.arpa`,
`*.internal`, `*.lan`), and MDBOOST_ALLOWED_HOSTS.
"""

import functools
import ipaddress
import socket

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.web.errors import error_page

LOOPBACK_NAMES = ("localhost",)
PUBLIC_PREFIX = "/static/"
# mDNS (DSM announces NAME.local); loopback; the names a home router gives its LAN, none of which
# the public root delegates, so no outside page can own one: RFC 8375's home.arpa, ICANN's
# private-use .internal, and .lan (OpenWrt's and many routers' default).
ALWAYS_ALLOWED_SUFFIXES = (".local", ".localhost", ".home.arpa", ".internal", ".lan")


@functools.cache
def own_names() -> frozenset[str]:
    """This machine's host name and fully qualified name, looked up once per process."""
    return frozenset(n.lower().rstrip(".") for n in (socket.gethostname(), socket.getfqdn()) if n)


def host_name(header: str) -> str | None:
    """The name or address in a Host header without its port; None when it is malformed."""
    header = header.strip().lower()
    if header.startswith("["):  # [IPv6]:port
        inside, bracket, rest = header[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return inside
    name, colon, port = header.partition(":")
    if colon and not port.isdigit():
        return None
    return name.rstrip(".")


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_single_label(name: str) -> bool:
    """A dotless name such as `diskstation`: resolved on the LAN (DNS search domain, mDNS, NetBIOS),
    never by public DNS, which ICANN keeps free of dotless names."""
    return "." not in name and ":" not in name


def wants_json(accept: str) -> bool:
    """An API client that asked for JSON and not for a page; browsers and curl get the page."""
    return "application/json" in accept and "text/html" not in accept


class HostAllowList:
    """Which Host headers mdboost answers to; `configured` is MDBOOST_ALLOWED_HOSTS."""

    def __init__(self, configured: list[str]) -> None:
        names = [n.strip().lower().rstrip(".") for n in configured if n.strip()]
        self.exact = {*LOOPBACK_NAMES, *own_names(), *(n for n in names if not n.startswith("*."))}
        self.suffixes = (*ALWAYS_ALLOWED_SUFFIXES, *(n[1:] for n in names if n.startswith("*.")))

    def allows(self, header: str | None) -> bool:
        name = host_name(header) if header else None
        if not name:
            return False
        return (
            is_ip_literal(name)
            or is_single_label(name)
            or name in self.exact
            or name.endswith(self.suffixes)
        )


class HostGuard:
    """Answers 403, saying how to allow the name, to any request whose Host is not allowed."""

    def __init__(self, app: ASGIApp, allowed: HostAllowList) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        raw = headers.get(b"host")
        header = raw.decode("latin-1") if raw is not None else None
        # The stylesheet and icons are public and hold nothing to read: the refusal page uses them.
        if self.allowed.allows(header) or scope["path"].startswith(PUBLIC_PREFIX):
            await self.app(scope, receive, send)
            return
        shown = repr(header[:100]) if header is not None else "(none)"
        name = (host_name(header) if header else None) or "the name"
        message = (
            f"mdboost does not answer to the host name {shown}, to keep other web sites from "
            "reaching it through a name of theirs (DNS rebinding). Open it by the NAS's own name, "
            "its IP address or NAME.local, or add this name to "
            f'MDBOOST_ALLOWED_HOSTS in compose.yaml (MDBOOST_ALLOWED_HOSTS: "{name}"; '
            "comma-separated, *.example.org for a whole domain) and restart mdboost."
        )
        response: Response
        if wants_json(headers.get(b"accept", b"").decode("latin-1")):
            response = JSONResponse({"detail": message}, status_code=403)
        else:
            response = error_page(403, message)
        await response(scope, receive, send)
