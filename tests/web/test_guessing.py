"""Guessing secrets through the real server: wrong bearer tokens are throttled per address like
passwords, and overall; the login throttle's memory is bounded without forgetting who is blocked.

Linux routes all of 127.0.0.0/8 to the loopback device: a client bound to 127.0.0.N is another
address (127.0.0.1 is a trusted proxy by default, so the guessers use others).
"""

import httpx

from app.config import Settings
from app.main import create_app
from tests.server import tree_server

TOKEN = "env-token-0123456789-0123456789-0123456789"
PASSWORD = "correct horse battery"


def from_address(server, address: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=server.base, transport=transport, timeout=10)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_wrong_bearer_tokens_are_throttled_per_address(box, tmp_path):
    with tree_server(box, tmp_path, MDBOOST_API_TOKEN=TOKEN) as server:
        guesser, neighbour = from_address(server, "127.0.0.2"), from_address(server, "127.0.0.3")
        codes = [
            guesser.get("/api/tokens", headers=bearer(f"guess-{n}")).status_code for n in range(8)
        ]
        assert codes == [401] * 5 + [429] * 3
        refused = guesser.get("/api/tokens", headers=bearer(TOKEN))
        assert refused.status_code == 429  # even the right one: a blocked guesser learns nothing
        assert 0 < int(refused.headers["retry-after"]) <= 61
        assert neighbour.get("/api/tokens", headers=bearer("guess")).status_code == 401
        assert neighbour.get("/api/tokens", headers=bearer(TOKEN)).status_code == 200


def test_wrong_bearer_tokens_are_throttled_overall(box, tmp_path):
    """300 wrong tokens a minute in all: then only an address that has not failed yet may try."""
    with tree_server(box, tmp_path, MDBOOST_API_TOKEN=TOKEN) as server:
        for n in range(60):
            with from_address(server, f"127.0.2.{n + 1}") as guesser:
                for _ in range(5):
                    assert guesser.get("/api/tokens", headers=bearer("guess")).status_code == 401
        with from_address(server, "127.0.3.1") as late:
            assert late.get("/api/tokens", headers=bearer("guess")).status_code == 401
            assert late.get("/api/tokens", headers=bearer("guess")).status_code == 429
        with from_address(server, "127.0.3.2") as owner:
            assert owner.get("/api/tokens", headers=bearer(TOKEN)).status_code == 200


def test_the_login_throttle_remembers_who_is_blocked_after_10001_other_addresses(tmp_path):
    """The app's own login throttle (a real server would need 10,001 logins within the minute
    the block lasts: more than a loaded 2-core host does): 10,001 addresses guess once each,
    and the address blocked before them is still blocked, with the memory bounded."""
    throttle = create_app(Settings(db=tmp_path / "mdboost.db")).state.login_throttle
    assert [throttle.reserve("10.9.9.9") for _ in range(6)][:5] == [0] * 5
    assert throttle.reserve("10.9.9.9") > 0
    for n in range(10_001):
        throttle.reserve(f"10.{n // 250}.{n % 250}.1")
    assert throttle.reserve("10.9.9.9") > 0
    assert len(throttle.failures) <= 10_001
