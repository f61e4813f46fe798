"""A notification's secrets stay with the receiver they were given
for. A redirect is never followed (to another origin, or to ftp://), and a secret shows in no
form (raw, percent-decoded, escaped in an exception) on the page or in the log. Through the real
server and real local receivers."""

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server, tree_server

PASSWORD = "correct horse battery"


@pytest.fixture
def receivers() -> Iterator[tuple[HttpReceiver, HttpReceiver]]:
    redirector, elsewhere = HttpReceiver().start(), HttpReceiver().start()
    yield redirector, elsewhere
    redirector.stop()
    elsewhere.stop()


def serve(box, tmp_path: Path, **env: str) -> Server:
    return tree_server(
        box,
        tmp_path,
        MDBOOST_PASSWORD=PASSWORD,
        MDBOOST_NOTIFY_TIMEOUT_SECONDS="3",
        **ALLOW_LOCAL,
        **env,
    )


class Owner:
    """The admin on the account page, signed in, with the page's CSRF token."""

    def __init__(self, server: Server) -> None:
        self.client = httpx.Client(base_url=server.base, timeout=30)
        self.client.post("/login", data={"password": PASSWORD})
        page = self.client.get("/account").text
        self.csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)

    def add(self, url: str) -> httpx.Response:
        return self.client.post("/account/notify", data={"url": url, "csrf_token": self.csrf})

    def test_each(self) -> list[str]:
        """Press "test" on every destination; the result texts."""
        ids = re.findall(r'action="/account/notify/(\d+)/test"', self.client.get("/account").text)
        assert ids
        return [
            self.client.post(f"/account/notify/{i}/test", data={"csrf_token": self.csrf}).text
            for i in ids
        ]


@pytest.mark.parametrize("where", ["another-origin", "ftp"])
def test_a_redirect_is_reported_not_followed(box, tmp_path, receivers, where):
    redirector, elsewhere = receivers
    with socket.socket() as ftp:
        ftp.bind(("127.0.0.1", 0))
        ftp.listen()
        ftp.setblocking(False)
        redirector.status = 302
        redirector.location = {
            "another-origin": f"http://{elsewhere.base}/collect",
            "ftp": f"ftp://127.0.0.1:{ftp.getsockname()[1]}/collect",
        }[where]
        with serve(box, tmp_path) as server:
            owner = Owner(server)
            assert (
                owner.add(f"ntfy+http://{redirector.base}/topic_q?token=tk_bearer77").status_code
                == 303
            )
            assert owner.add(f"gotify+http://{redirector.base}/GotifyKey77").status_code == 303
            results = owner.test_each()
        for result in results:
            assert "not sent: the log says why" in result and "302" not in result, result
        assert "HTTP 302 Found (a redirect: not followed)" in (tmp_path / "server.log").read_text()
        assert len(redirector.taken()) == 2  # each sent once, to the receiver named
        assert elsewhere.taken() == []  # nothing, and no Authorization or X-Gotify-Key
        with pytest.raises(BlockingIOError):
            ftp.accept()  # no connection was ever made to the ftp:// target


SECRET_URLS = [
    "ntfy+http://{host}/topic_s?token=tk_crlf88%0d%0aX-Evil:%20yes",
    "ntfy+http://:pw_crlf88%0a1@{host}/topic_s",
    "ntfy+http://user_crlf88:pw%0d@{host}/topic_s",
]


@pytest.mark.parametrize("template", SECRET_URLS)
def test_an_encoded_line_break_in_a_secret_is_refused_and_never_shown(
    box, tmp_path, receivers, template
):
    redirector, _ = receivers
    url = template.format(host=redirector.base)
    # The secret's start reads the same raw, decoded and escaped: absent means every form is.
    secret_start = re.search(r"(tk|pw|user)_crlf88", url).group(0)
    with serve(box, tmp_path, MDBOOST_NOTIFY=url) as server:
        owner = Owner(server)
        added = owner.add(url)
        assert added.status_code == 400 and "control characters" in added.text
        assert secret_start not in added.text
        page = owner.client.get("/account").text
        assert secret_start not in page
    assert redirector.taken() == []  # never sent, so never a header with a line break
    log = (tmp_path / "server.log").read_text()
    assert "control characters" in log  # MDBOOST_NOTIFY's problem is reported ...
    assert secret_start not in log  # ... with no form of the secret
