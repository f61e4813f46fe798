"""The web suites' fixtures: Debian's chromium (never one Playwright downloads), a demo box per
browser module, and a TestClient over a temporary kernel tree."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, sync_playwright

from app.config import Settings
from app.main import create_app
from tests import apt
from tests.kernel_tree import KernelTree
from tests.server import Server
from tests.web.browsing import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium; installed with apt-get in CI or as root, never downloaded by Playwright."""
    if not os.path.exists(CHROMIUM):
        if not apt.may_install():
            pytest.skip(apt.not_installed("chromium"))
        apt.install("chromium", recommends=True)  # its fonts: the layout tests measure text
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One demo box at 300x per browser test module."""
    state = tmp_path_factory.mktemp("ui-demo")
    args = ["demo", "--speedup", "300", "--state-dir", str(state)]
    with Server(args, log=state / "server.log") as running:
        yield running


@pytest.fixture
def client(
    tree: KernelTree, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[TestClient]:
    for name in ("md0", "md1", "md2"):
        tree.md(name)
    # The open demo: boost and auto-tune need no login, unless a password is given (locked).
    params = getattr(request, "param", {})
    settings = Settings(
        proc_root=tree.proc,
        sys_root=tree.sys,
        db=tmp_path / "db.sqlite",
        sample_seconds=0.2,
        demo=True,
        demo_open="password" not in params,
        **params,
    )
    with TestClient(create_app(settings)) as test_client:
        yield test_client
