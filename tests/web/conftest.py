"""The web suites' fixtures: Debian's chromium (never one Playwright downloads), a demo box per
browser module, a TestClient over a temporary kernel tree, and templates that fail a test where
they read an attribute their object lacks."""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
from fastapi.templating import Jinja2Templates
from fastapi.testclient import TestClient
from jinja2.utils import missing
from playwright.sync_api import Browser, sync_playwright

from app.config import Settings
from app.main import create_app
from app.web import templating
from tests import apt
from tests.kernel_tree import KernelTree
from tests.server import Server
from tests.web.browsing import CHROMIUM, CHROMIUM_ARGS


class MissingAttribute(jinja2.Undefined):
    """What a template gets for an attribute its object lacks (a field a view no longer has):
    the test fails there, where Jinja would render it as empty, silently. A name a partial may
    or may not be given (`oob`, `oob_card`) stays undefined as usual."""

    def _fail_on_an_attribute(self) -> None:
        if self._undefined_obj is not missing:
            self._fail_with_undefined_error()

    def __str__(self) -> str:
        self._fail_on_an_attribute()
        return ""

    def __bool__(self) -> bool:
        self._fail_on_an_attribute()
        return False

    def __iter__(self) -> Iterator[Any]:
        self._fail_on_an_attribute()
        return iter(())

    __hash__ = jinja2.Undefined.__hash__


class StrictTemplates(Jinja2Templates):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env.undefined = MissingAttribute


@pytest.fixture(scope="session", autouse=True)
def templates_fail_on_a_missing_attribute() -> Iterator[None]:
    """The pages these tests render (in this process; a browser test's server is its own)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(templating, "Jinja2Templates", StrictTemplates)
        templating._templates.cache_clear()
        yield
    templating._templates.cache_clear()


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
