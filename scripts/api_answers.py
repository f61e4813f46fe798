"""Save every answer of the API (and the pages) over the tests' syncing box, at fixed times, so
that a refactoring can show its answers byte-identical before and after.

    PYTHONPATH=. python scripts/api_answers.py OUT_DIR    (from the repository's top)
    diff -r BEFORE_DIR AFTER_DIR

The box (tests/kernel_tree.syncing_box) reshapes md2. The app runs in this process on a wall
clock that only this script moves, and its sampler ticks only when the script says (its loop is
replaced by one that waits), so each run sees the same ticks at the same times. The script then
walks one owner's evening: look, boost, add a schedule, a token and a notification destination,
revert, and the reshape ending; after each step it GETs every JSON endpoint, the metrics and the
pages. Random secrets (a new token) are masked.
"""

import asyncio
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.clock import Timeline
from app.config import Settings
from app.live import sampler
from app.main import create_app
from app.notify import delivery
from app.web.auth import CSRF_HEADER
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    act_like_md,
    idle_box,
    mdstat_text,
    progress,
    raid1,
    raid5,
    syncing_box,
)

START = 1_790_000_000.0  # unix seconds: a fixed evening
TICK_S = 5.0
PASSWORD = "an owner's password"
SAME_SITE = {"origin": "null", "sec-fetch-site": "same-origin"}


class Clock:
    """The app's wall and monotonic time, moved only by the script."""

    def __init__(self) -> None:
        self.now = START

    def wall(self) -> float:
        return self.now

    def mono(self) -> float:
        return self.now - START + 1000.0


class Ticks:
    """The sampler's loop, replaced: the script takes each tick itself."""

    def __init__(self) -> None:
        self.sampler: sampler.Sampler | None = None
        self.on_tick: Callable[[Any], None] | None = None

    async def run_forever(
        self,
        the_sampler: sampler.Sampler,
        stop: asyncio.Event,
        next_interval: Callable[[Any], float],
        on_tick: Callable[[Any], None] | None = None,
        first: Any = None,
    ) -> None:
        self.sampler, self.on_tick = the_sampler, on_tick
        await stop.wait()

    def take(self) -> None:
        assert self.sampler is not None and self.on_tick is not None
        self.on_tick(self.sampler.sample_once())


async def no_delivery(deliverer: Any, stop: asyncio.Event) -> None:
    """Messages stay queued: nothing leaves this machine."""
    await stop.wait()


def reshape_at(tree: KernelTree, done: int) -> None:
    tree.mdstat(mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1()))
    tree.write("sys/block/md2/md/sync_completed", f"{done * 2} / {RESHAPE_TOTAL * 2}")
    tree.write("sys/block/md2/md/sync_speed", "6000")


class Walk:
    def __init__(self, client: TestClient, clock: Clock, ticks: Ticks, out: Path) -> None:
        self.client, self.clock, self.ticks, self.out = client, clock, ticks, out
        self.masks: list[str] = []
        self.step = 0

    def tick(self, count: int = 1) -> None:
        for _ in range(count):
            self.clock.now += TICK_S
            self.ticks.take()

    def save(self, name: str, status: int, body: bytes) -> None:
        text = body.decode()
        for secret in self.masks:
            text = text.replace(secret, "<masked>")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "root"
        (self.out / f"{self.step:02d}-{safe}.txt").write_text(f"{status}\n{text}")

    def dump(self, label: str) -> None:
        """Every GET, after step `label`."""
        self.step += 1
        get = self.client.get
        paths = [
            "/healthz",
            "/api/arrays",
            "/api/runs",
            "/api/tuning",
            "/api/presets",
            "/api/schedules",
            "/api/tokens",
            "/api/pool/forecast",
            "/metrics",
            "/",
            "/ui/boost",
            "/account",
        ]
        for name in ("md0", "md2"):
            paths += [
                f"/api/arrays/{name}/samples",
                f"/api/arrays/{name}/diagnosis",
                f"/api/arrays/{name}/forecast",
                f"/ui/arrays/{name}",
            ]
        runs = get("/api/runs").json()
        for run in runs.get("runs", []):
            paths += [f"/api/runs/{run['id']}", f"/runs/{run['id']}"]
        for path in paths:
            answer = get(path)
            self.save(f"{label}{path}", answer.status_code, answer.content)

    def post(self, label: str, path: str, **kwargs: Any) -> Any:
        self.step += 1
        answer = self.client.post(path, headers=SAME_SITE, follow_redirects=False, **kwargs)
        self.save(f"{label}-post{path}", answer.status_code, answer.content)
        return answer


def walk(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mdboost-answers-"))
    tree = KernelTree(work / "kernel")
    syncing_box(tree)
    reshape_at(tree, 1000)
    os.environ["MDBOOST_ALLOWED_HOSTS"] = "testserver"
    os.environ["TZ"] = "UTC"
    time.tzset()
    settings = Settings(
        proc_root=tree.proc,
        sys_root=tree.sys,
        db=work / "mdboost.db",
        password=PASSWORD,
        sample_seconds=TICK_S,
    )
    clock, ticks = Clock(), Ticks()
    sampler.run_forever = ticks.run_forever  # type: ignore[assignment]
    delivery.run_forever = no_delivery  # type: ignore[assignment]
    app = create_app(settings)
    app.state.clock = Timeline(wall=clock.wall, mono=clock.mono)
    with TestClient(app) as client:
        steps = Walk(client, clock, ticks, out)
        for done in range(2000, 12000, 2000):
            reshape_at(tree, done * 50)
            steps.tick()
        assert (
            client.post("/login", data={"password": PASSWORD}, follow_redirects=False).status_code
            == 303
        )
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/account").text)
        assert csrf is not None
        steps.masks.append(csrf[1])
        client.headers[CSRF_HEADER] = csrf[1]
        steps.dump("watching")

        before = tree.snapshot()
        steps.post("plan", "/api/presets/boost/plan", json={})
        steps.post("boost", "/api/boost", json={"on": True})
        act_like_md(tree, before)
        for done in range(12000, 20000, 2000):
            reshape_at(tree, done * 80)
            steps.tick()
        steps.dump("boosted")

        steps.post(
            "schedule", "/api/schedules", json={"preset": "boost", "start": "01:00", "end": "06:00"}
        )
        made = steps.client.post("/api/tokens", json={"name": "prometheus", "scope": "read"})
        steps.masks.append(made.json()["token"])
        steps.step += 1
        steps.save("token-post/api/tokens", made.status_code, made.content)
        steps.post("notify", "/account/notify", data={"url": "https://ntfy.sh/mdboost-answers"})
        steps.tick(2)
        steps.dump("configured")

        steps.post("revert", "/api/revert")
        act_like_md(tree, before)
        for done in range(20000, 24000, 2000):
            reshape_at(tree, done * 80)
            steps.tick()
        steps.dump("reverted")

        before = tree.snapshot()
        steps.post("autotune", "/api/autotune", json={"array": "md2"})
        for done in range(24000, 40000, 2000):
            act_like_md(tree, before)
            reshape_at(tree, done * 80)
            steps.tick(3)
        steps.dump("autotuning")
        steps.post("autotune-revert", "/api/revert")
        act_like_md(tree, before)

        idle_box(tree)
        steps.tick(3)
        steps.dump("ended")
    print(f"{len(list(out.iterdir()))} answers in {out}")


if __name__ == "__main__":
    walk(Path(sys.argv[1]))
