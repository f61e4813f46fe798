"""The client behind a reverse proxy: its address and scheme, trusting only the proxies named.

uvicorn's own proxy-headers handling is off (cli.py): with FORWARDED_ALLOW_IPS=* it takes the
leftmost X-Forwarded-For entry, which the client writes itself, so rotating it escaped the login
throttle and naming the admin's address locked the admin out. Here the client is the
rightmost hop that is not a trusted proxy: the address the nearest trusted proxy saw.
"""

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(hop: str) -> str:
    """An X-Forwarded-For entry without its port: "1.2.3.4:5", "[::1]:5" -> the address."""
    hop = hop.strip()
    if hop.startswith("["):
        return hop[1:].partition("]")[0]
    if hop.count(":") == 1:
        return hop.partition(":")[0]
    return hop


class TrustedProxies:
    """FORWARDED_ALLOW_IPS: addresses and networks of proxies, comma-separated; `*` trusts any
    peer, and then only the hop it appended counts (what the nearest proxy saw)."""

    def __init__(self, spec: str) -> None:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        self.trust_all = "*" in names
        self.networks: list[Network] = []
        for name in names:
            try:
                self.networks.append(ipaddress.ip_network(name, strict=False))
            except ValueError:
                continue  # "*", or not an address: never matches a peer

    def trusts(self, host: str) -> bool:
        if self.trust_all:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def client(self, peer: str, forwarded_for: str) -> str:
        """The client's address: the peer itself unless it is a trusted proxy."""
        hops = [_address(h) for h in forwarded_for.split(",") if h.strip()]
        if not hops or not self.trusts(peer):
            return peer
        if self.trust_all:
            return hops[-1]
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0]  # every hop is a trusted proxy: the first one sent the request


class ForwardedMiddleware:
    """Sets the request's client and scheme from X-Forwarded-For/-Proto sent by a trusted proxy."""

    def __init__(self, app: ASGIApp, proxies: TrustedProxies) -> None:
        self.app = app
        self.proxies = proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if scope["type"] in ("http", "websocket") and peer and self.proxies.trusts(peer[0]):
            forwarded_for: list[str] = []
            proto = None
            for name, value in scope["headers"]:
                if name == b"x-forwarded-for":
                    forwarded_for.append(value.decode("latin-1"))
                elif name == b"x-forwarded-proto":
                    proto = value.decode("latin-1").split(",")[-1].strip().lower()
            client = self.proxies.client(peer[0], ",".join(forwarded_for))
            # In place, as uvicorn's own middleware does, so its access log names the client.
            scope["client"] = (client, peer[1] if client == peer[0] else 0)
            if proto in ("http", "https") and scope["type"] == "http":
                scope["scheme"] = proto
        await self.app(scope, receive, send)
