"""A page load and a boost press ask each question of the database once, on one connection: the
load limit's owner check, the route's login check, the tuning status, the boost panel and the
cards share what was read."""

import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from app.config import Settings
from app.main import create_app
from app.store import db
from scripts.count_io import add_past_runs
from tests.kernel_tree import KernelTree, syncing_box

PASSWORD = "an owner's password"
SAME_SITE = {"origin": "null", "sec-fetch-site": "same-origin"}


def test_a_dashboard_load_and_a_boost_press_ask_each_question_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    opened: list[list[str]] = []  # each request connection's statements
    connect = db.connect_for_request

    def traced(path: Path) -> sqlite3.Connection:
        conn = connect(path)
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        opened.append(statements)
        return conn

    monkeypatch.setattr(db, "connect_for_request", traced)
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite", password=PASSWORD
    )
    with TestClient(create_app(settings)) as client:
        client.post("/login", data={"password": PASSWORD}, follow_redirects=False)
        found = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/account").text)
        assert found is not None
        pressed = {**SAME_SITE, "hx-request": "true"}
        asks: dict[str, Callable[[], Response]] = {
            "GET /": lambda: client.get("/"),
            "boost on": lambda: client.post(
                "/ui/boost", data={"csrf_token": found[1], "on": "true"}, headers=pressed
            ),
        }
        for what, ask in asks.items():
            opened.clear()
            answer = ask()
            assert answer.status_code == 200, (what, answer.text)
            assert "Signed in as admin" in answer.text or "Boost is on" in answer.text
            assert len(opened) == 1, what  # the owner check's connection is the route's
            twice = [s for s, n in Counter(opened[0]).items() if n > 1]
            assert twice == [], what
            assert sum("auth_sessions" in s for s in opened[0]) == 1, what


def test_a_made_up_cookie_is_not_an_owner_and_its_connection_is_closed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner check finds no session: the route asks no second time and is not signed in,
    and the connection the check opened is not held while the request waits for a slot."""
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    connections: list[sqlite3.Connection] = []
    connect = db.connect_for_request

    def kept(path: Path) -> sqlite3.Connection:
        connections.append(connect(path))
        return connections[-1]

    monkeypatch.setattr(db, "connect_for_request", kept)
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")
    settings = Settings(
        proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite", password=PASSWORD
    )
    with TestClient(create_app(settings)) as client:
        client.cookies.set("mdboost_session", "made-up")
        page = client.get("/")
        assert page.status_code == 200
        assert "Signed in as admin" not in page.text
        assert 'href="/login?next=/%23boost">Sign in' in page.text
    assert len(connections) == 2  # the check's, closed; then the route's
    for conn in connections:
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")


def test_a_dashboards_questions_do_not_grow_with_the_past_runs_it_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The past runs' presets and measured ratios are read for all of them at once: a page that
    lists twelve runs asks what one that lists three does (it asked twice more for each run)."""
    tree = KernelTree(tmp_path / "kernel")
    syncing_box(tree)
    opened: list[list[str]] = []
    connect = db.connect_for_request

    def traced(path: Path) -> sqlite3.Connection:
        conn = connect(path)
        opened.append([])
        conn.set_trace_callback(opened[-1].append)
        return conn

    monkeypatch.setattr(db, "connect_for_request", traced)
    monkeypatch.setenv("MDBOOST_ALLOWED_HOSTS", "testserver")
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "db.sqlite")
    asked = []
    with TestClient(create_app(settings)) as client:
        for runs in (3, 9):
            add_past_runs(settings.db, runs, time.time() - 86400.0 * len(asked) * 3)
            opened.clear()
            page = client.get("/")
            assert page.status_code == 200
            assert page.text.count("md0 check") == 3 + 9 * len(asked)
            assert page.text.count("×1.5") == page.text.count("md0 check")
            asked.append(len(opened[0]))
    assert asked[0] == asked[1]
