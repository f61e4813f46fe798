"""Waiting for the sampler: the page shows the present the last tick read, so a test that
changes the kernel tree under a running app asks for the page after the next tick."""

import time

from fastapi.testclient import TestClient

from tests.server import wait_for


def after_a_tick(client: TestClient) -> None:
    """Return once the app's sampler has read the tree since this call (at most 10 s)."""
    since = time.time()
    snapshot_builder = client.app.state.snapshot_builder  # type: ignore[attr-defined]
    wait_for(lambda: (snapshot_builder.snapshot.ts or 0) > since, 10, "a sampler tick")
