"""Every route that writes, on a full disk under the real server: refused with a 503 and the
reason, never a 500 and never a traceback. And the full disk is said in a notification, once,
while the disk is still full (the outbox lives on that disk: it is sent directly)."""

import re
from pathlib import Path

import httpx

from tests.conftest import SmallDisk
from tests.kernel_tree import KernelTree
from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import tree_server, wait_for

PASSWORD = "correct horse battery"
TOKEN = "test-token-for-full-disks-0123456789abcdef"
BEARER = {"authorization": f"Bearer {TOKEN}"}
SAME_SITE = {"sec-fetch-site": "same-origin"}
FULL = "disk holding the database is full"


def said_full(answer: httpx.Response) -> bool:
    return "disk is full" in answer.text or FULL in answer.text


def full_disk_messages(receiver: HttpReceiver) -> list[bytes]:
    return [r.body for r in receiver.taken() if b"database is full" in r.body]


def test_every_change_is_refused_with_a_503_and_its_reason(
    box: KernelTree, tmp_path: Path, small_disk: SmallDisk
):
    receiver = HttpReceiver().start()
    server = tree_server(
        box,
        tmp_path,
        MDBOOST_DB=str(small_disk.path / "mdboost.db"),
        MDBOOST_MAX_CACHE_MB="1024",
        MDBOOST_API_TOKEN=TOKEN,
        MDBOOST_PASSWORD=PASSWORD,
        **ALLOW_LOCAL,
    )
    with server:
        api = httpx.Client(base_url=server.base, headers=BEARER, timeout=10)
        page = httpx.Client(base_url=server.base, headers=SAME_SITE, timeout=10)
        assert page.post("/login", data={"password": PASSWORD}).status_code == 303
        account = page.get("/account").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', account)
        assert csrf
        form = {"csrf_token": csrf.group(1)}
        # What the routes below remove, made while there is room.
        assert api.post("/api/boost", json={"on": True}).status_code == 200
        schedule = api.post(
            "/api/schedules", json={"preset": "boost", "start": "01:00", "end": "02:00"}
        ).json()["id"]
        token = api.post("/api/tokens", json={"name": "script"}).json()
        (listed,) = [t for t in api.get("/api/tokens").json()["tokens"] if t["name"] == "script"]
        added = page.post("/account/notify", data={**form, "url": f"http://{receiver.base}/hook"})
        assert added.status_code == 303, added.text
        destination = re.search(r"/account/notify/(\d+)/test", page.get("/account").text)
        assert destination
        kept = destination.group(1)

        small_disk.fill()
        wait_for(lambda: api.get("/healthz").status_code == 503, 60, "the full disk to be seen")
        routes = [
            ("POST", "/api/presets/balanced/apply", api, {"json": {}}),
            ("POST", "/api/revert", api, {}),
            ("POST", "/api/boost", api, {"json": {"on": False}}),
            ("POST", "/api/boost", api, {"json": {"on": True}}),
            ("POST", "/api/autotune", api, {"json": {}}),
            (
                "POST",
                "/api/schedules",
                api,
                {"json": {"preset": "boost", "start": "03:00", "end": "04:00"}},
            ),
            ("DELETE", f"/api/schedules/{schedule}", api, {}),
            ("POST", "/api/tokens", api, {"json": {"name": "another"}}),
            ("DELETE", f"/api/tokens/{listed['id']}", api, {}),
            (
                "POST",
                "/account/notify",
                page,
                {"data": {**form, "url": f"http://{receiver.base}/other"}},
            ),
            ("POST", f"/account/notify/{kept}/remove", page, {"data": form}),
            ("POST", "/account/tokens", page, {"data": {**form, "name": "x"}}),
            ("POST", f"/account/tokens/{listed['id']}/revoke", page, {"data": form}),
            ("POST", "/account/sign-out-everywhere", page, {"data": form}),
            ("POST", "/logout", page, {"data": form}),
            (
                "POST",
                "/login",
                httpx.Client(base_url=server.base, headers=SAME_SITE),
                {"data": {"password": PASSWORD}},
            ),
        ]
        answers = {}
        for method, path, client, kwargs in routes:
            answer = client.request(method, path, **kwargs)
            said = (answer.status_code, said_full(answer), answer.text[-300:])
            answers[f"{method} {path} {kwargs.get('json', '')}"] = said
        wrong = {k: v for k, v in answers.items() if v[0] != 503 or not v[1]}
        # The page's panels (htmx swaps only a 2xx): the panel comes back saying why.
        hx = {"hx-request": "true", "x-csrf-token": form["csrf_token"]}
        panels = [
            ("/ui/boost", {"on": "true"}),
            ("/ui/boost", {"on": "false"}),
            ("/ui/autotune", {}),
            ("/ui/revert", {}),
            ("/ui/schedules", {"preset": "boost", "start": "05:00", "end": "06:00"}),
            (f"/ui/schedules/{schedule}/remove", {}),
        ]
        for path, data in panels:
            answer = page.post(path, data={**form, **data}, headers=hx)
            if answer.status_code != 200 or not said_full(answer):
                wrong[f"POST {path} {data}"] = (answer.status_code, False, answer.text[-300:])
        assert not wrong, "\n".join(f"{k}: {v[0]} {v[2]}" for k, v in wrong.items())
        assert token["token"]
        # A test message needs no room: it is sent, and the page says so, not a 500.
        tested = page.post(f"/account/notify/{kept}/test", data=form)
        assert tested.status_code == 200 and "Test message sent" in tested.text

        wait_for(lambda: full_disk_messages(receiver), 30, "the full disk's notification")
        said_at = api.get("/api/arrays").json()["as_of"]
        wait_for(lambda: api.get("/api/arrays").json()["as_of"] >= said_at + 2.0, 30, "ticks")
        assert len(full_disk_messages(receiver)) == 1, "said once, not once a tick"
        small_disk.free()
        wait_for(lambda: api.get("/healthz").status_code == 200, 60, "room again")
    receiver.stop()
    assert len(full_disk_messages(receiver)) == 1
    assert "Traceback" not in (tmp_path / "server.log").read_text()
