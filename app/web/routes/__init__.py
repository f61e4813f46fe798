"""Thin routers, one per area of the API and the page; none imports another.

Each module's `router` is a `Routes`: its decorators only record the path operations, and
create_app adds them to the app itself (`add_to`, FastAPI's `add_api_route`), so each route is
built once. With an APIRouter and `app.include_router`, FastAPI 0.165 builds every route when its
decorator runs and again, for all the routes of a router, when a request first reaches one of
them (the inclusion's own copy of their dependants and response validators): 0.7 MiB of the
server's RSS after the page's polls (issue 27). Paths, tags, dependencies and options are those
the APIRouter was given, in the same order.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI, params
from starlette.types import ASGIApp

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


@dataclass(frozen=True)
class Operation:
    """One path operation as its decorator gave it; `path` with the router's prefix."""

    path: str
    methods: frozenset[str]
    endpoint: Callable[..., Any]
    include_in_schema: bool
    options: dict[str, Any]


@dataclass
class Routes:
    """APIRouter's decorators (get, post, delete) and mount, recorded for `add_to`."""

    prefix: str = ""
    tags: list[str] = field(default_factory=list)
    include_in_schema: bool = True
    dependencies: Sequence[params.Depends] = ()
    operations: list[Operation] = field(default_factory=list)
    mounts: list[tuple[str, ASGIApp, str]] = field(default_factory=list)

    def get(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._record(path, "GET", options)

    def post(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._record(path, "POST", options)

    def delete(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._record(path, "DELETE", options)

    def mount(self, path: str, app: ASGIApp, name: str) -> None:
        self.mounts.append((self.prefix + path, app, name))

    def _record(
        self, path: str, method: str, options: dict[str, Any]
    ) -> Callable[[Endpoint], Endpoint]:
        def decorator(endpoint: Endpoint) -> Endpoint:
            operation = Operation(
                path=self.prefix + path,
                methods=frozenset({method}),
                endpoint=endpoint,
                include_in_schema=self.include_in_schema and options.pop("include_in_schema", True),
                options=options,
            )
            self.operations.append(operation)
            return endpoint

        return decorator

    def add_to(self, app: FastAPI, dependencies: Sequence[params.Depends] = ()) -> None:
        """Build each route on `app`: `dependencies` first (include_router's), then the
        router's, then the operation's own, as include_router ordered them."""
        for op in self.operations:
            options = dict(op.options)
            app.add_api_route(
                op.path,
                op.endpoint,
                methods=sorted(op.methods),
                tags=[*self.tags, *options.pop("tags", [])],
                dependencies=[*dependencies, *self.dependencies, *options.pop("dependencies", [])],
                include_in_schema=op.include_in_schema,
                **options,
            )
        for path, asgi, name in self.mounts:
            app.mount(path, asgi, name=name)
