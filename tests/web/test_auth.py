"""Issue 13: set-up, login and sessions hold against another site, a proxy's header and a race."""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.kernel_tree import KernelTree, mdstat_text, raid5

PASSWORD = "correct horse battery"
CROSS_SITE = {"origin": "http://evil.example", "sec-fetch-site": "cross-site"}


def settings(tree: KernelTree, tmp_path: Path, **extra: object) -> Settings:
    tree.mdstat(mdstat_text(raid5()))
    tree.md("md2")
    return Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db", **extra)


@pytest.fixture
def fresh(tree: KernelTree, tmp_path: Path) -> Iterator[TestClient]:
    """A fresh install: no password yet."""
    with TestClient(create_app(settings(tree, tmp_path)), follow_redirects=False) as client:
        yield client


def stored_password(tmp_path: Path) -> list[tuple[str]]:
    return (
        sqlite3.connect(tmp_path / "mdboost.db")
        .execute("SELECT hash FROM auth_password")
        .fetchall()
    )


def test_another_site_cannot_claim_the_one_time_setup(fresh, tmp_path):
    form = {"password": "attacker-password", "confirm": "attacker-password"}
    for headers in (
        CROSS_SITE,
        {"origin": "http://evil.example"},
        {"sec-fetch-site": "cross-site"},
    ):
        answer = fresh.post("/setup", data=form, headers=headers)
        assert answer.status_code == 403 and "mdboost_session" not in answer.headers.get(
            "set-cookie", ""
        )
    assert stored_password(tmp_path) == []
    same_site = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
    assert fresh.post("/setup", data=form, headers=same_site).status_code == 303


def test_another_site_cannot_sign_in_or_out(tree, tmp_path):
    with TestClient(
        create_app(settings(tree, tmp_path, password=PASSWORD)), follow_redirects=False
    ) as client:
        assert (
            client.post("/login", data={"password": PASSWORD}, headers=CROSS_SITE).status_code
            == 403
        )
        assert client.post("/login", data={"password": PASSWORD}).status_code == 303
        assert client.post("/logout", headers=CROSS_SITE).status_code == 403
        assert client.get("/account").status_code == 200  # still signed in
