"""The OpenAPI page documents every JSON body the API sends, and real answers fit what it says."""

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.main import create_app
from app.tuning.schedule import scheduler
from app.web import auth, routes
from tests.kernel_tree import KernelTree, syncing_box
from tests.web.test_polls import app_settings, reshape_history


@pytest.fixture
def client(tree: KernelTree, tmp_path: Path) -> Iterator[TestClient]:
    """A reshape with history, boost applied, a schedule and an API token: every body full."""
    syncing_box(tree)
    reshape_history(tmp_path / "db.sqlite", samples=50, events=5)
    with TestClient(create_app(app_settings(tree, tmp_path / "db.sqlite"))) as client:
        tuner = client.app.state.tuner
        tuner.apply("boost")
        scheduler.add(tuner.conn, "boost", "01:00", "07:00", tuner.clock())
        token = auth.create_api_token(tuner.conn, "dashboard", tuner.clock(), None)
        # The account's API (GET /api/tokens) is an admin's even on the open demo.
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def api_gets() -> list[APIRoute]:
    """Every documented GET route of the JSON API, from the routers themselves."""
    found = []
    for info in pkgutil.iter_modules(routes.__path__):
        module = importlib.import_module(f"{routes.__name__}.{info.name}")
        found += [
            route
            for route in module.router.routes
            if isinstance(route, APIRoute)
            and "GET" in route.methods
            and route.path.startswith("/api/")
            and route.include_in_schema
        ]
    return found


def test_every_api_get_documents_its_body(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    gets = {
        path
        for path, operations in paths.items()
        if path.startswith("/api/") and "get" in operations
    }
    assert len(gets) >= 10
    for path in sorted(gets):
        answer = paths[path]["get"]["responses"]["200"]
        schema = answer["content"]["application/json"]["schema"]
        assert schema.get("$ref", "").startswith("#/components/schemas/"), path


@pytest.mark.parametrize("name", ["md2", "md0"])  # reshaping, idle
def test_real_answers_validate_against_the_documented_bodies(client: TestClient, name: str) -> None:
    checked = 0
    for route in api_gets():
        # Routes return their model (response_model); the samples' json.dumps names it.
        model = route.response_model or route.responses[200]["model"]
        assert issubclass(model, BaseModel), route.path
        answer = client.get(route.path.replace("{name}", name).replace("{run_id}", "1"))
        assert answer.status_code == 200, (route.path, answer.text)
        model.model_validate(answer.json())
        checked += 1
    assert checked >= 9
