"""A destination on the NAS itself or its link (loopback, link-local with cloud metadata, the
NAS's own addresses) is refused unless MDBOOST_NOTIFY_ALLOW_LOCAL: otherwise an admin's "test"
is a port probe from inside the NAS. The real server, a real local receiver."""

import re
from collections.abc import Iterator

import httpx
import pytest

from app.notify.destinations import local_reason
from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server, tree_server

PASSWORD = "correct horse battery"


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    http = HttpReceiver().start()
    yield http
    http.stop()


class Owner:
    """The admin on the account page, signed in, with the page's CSRF token."""

    def __init__(self, server: Server) -> None:
        self.client = httpx.Client(base_url=server.base, timeout=30)
        self.client.post("/login", data={"password": PASSWORD})
        self.csrf = re.search(r'name="csrf_token" value="([^"]+)"', self.page()).group(1)

    def page(self) -> str:
        return self.client.get("/account").text

    def add(self, url: str) -> httpx.Response:
        return self.client.post("/account/notify", data={"url": url, "csrf_token": self.csrf})

    def test_each(self) -> list[str]:
        """Press "test" on every destination; the answers (the page's status line)."""
        ids = re.findall(r'action="/account/notify/(\d+)/test"', self.page())
        assert ids
        pages = [
            self.client.post(f"/account/notify/{i}/test", data={"csrf_token": self.csrf}).text
            for i in ids
        ]
        return [re.search(r'role="status">([^<]*)<', page).group(1) for page in pages]


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("127.0.0.1:{port}", "a loopback address"),
        ("[::1]:{port}", "a loopback address"),
        ("localhost:{port}", "resolves to"),
        ("169.254.169.254", "a link-local address"),
        ("[fe80::1]", "a link-local address"),
        ("0.0.0.0:{port}", "the unspecified address"),
    ],
)
def test_adding_a_destination_on_the_nas_itself_is_refused_with_the_reason(
    box, tmp_path, receiver, host, why
):
    url = f"http://{host.format(port=receiver.port)}/hook"
    with tree_server(box, tmp_path, MDBOOST_PASSWORD=PASSWORD) as server:
        owner = Owner(server)
        refused = owner.add(url)
        assert refused.status_code == 422
        assert why in refused.text and "MDBOOST_NOTIFY_ALLOW_LOCAL" in refused.text
        assert 'action="/account/notify/' not in owner.page()  # nothing was added
    assert receiver.taken() == []


def test_a_lan_receiver_can_be_added(box, tmp_path):
    with tree_server(box, tmp_path, MDBOOST_PASSWORD=PASSWORD) as server:
        assert Owner(server).add("ntfy+http://192.168.1.50:8090/nas_alerts").status_code == 303


def test_a_name_that_resolves_to_the_nas_at_send_time_is_not_sent_to(box, tmp_path, receiver):
    """MDBOOST_NOTIFY is not checked when read; a name resolving to loopback when the message
    goes out is refused then, and 'test' says only that it was not sent."""
    url = f"http://localhost:{receiver.port}/hook"
    with tree_server(box, tmp_path, MDBOOST_PASSWORD=PASSWORD, MDBOOST_NOTIFY=url) as server:
        (result,) = Owner(server).test_each()
    assert "not sent: the log says why" in result
    assert receiver.taken() == []
    assert "MDBOOST_NOTIFY_ALLOW_LOCAL is off" in (tmp_path / "server.log").read_text()


def test_the_test_answer_says_only_sent_or_not_sent(box, tmp_path, receiver):
    """What answered (a status, a body, an error) stays in the log: on the page it would say
    what listens at an address the NAS reaches and the admin's browser does not."""
    with tree_server(box, tmp_path, MDBOOST_PASSWORD=PASSWORD, **ALLOW_LOCAL) as server:
        owner = Owner(server)
        assert owner.add(f"http://{receiver.base}/hook").status_code == 303
        (sent,) = owner.test_each()
        receiver.status = 503
        (refused,) = owner.test_each()
        receiver.stop()
        (unreachable,) = owner.test_each()
    assert f"Test message sent to http://{receiver.base}/…hook." in sent
    assert "HTTP" not in sent and "200" not in sent
    for answer in (refused, unreachable):
        assert "not sent: the log says why" in answer
        assert "503" not in answer and "HTTP" not in answer and "refused" not in answer.lower()
    log = (tmp_path / "server.log").read_text()
    assert "HTTP 503" in log and "cannot reach the receiver" in log


@pytest.mark.parametrize(
    "host", ["127.9.9.9", "::ffff:127.0.0.1", "0.1.2.3", "::", "169.254.1.1", "fe80::2"]
)
def test_every_form_of_the_nas_itself_is_local(host):
    assert local_reason(host) is not None


@pytest.mark.parametrize("host", ["192.0.2.7", "198.51.100.20", "2001:db8::5"])
def test_addresses_elsewhere_are_not(host):
    assert local_reason(host) is None
