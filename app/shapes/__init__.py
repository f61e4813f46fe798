"""The JSON API's response bodies as pydantic models: each shape written once.

They import nothing of the app but md's types (a contract in pyproject.toml), so every layer
that builds an answer (store, diagnosis, live, tuning, web) constructs its model here and the
route returns it as it is (its return type is FastAPI's response_model): an answer is validated
and serialised by its model, unknown keys refused, and /docs and /openapi.json show the real
bodies. Only GET /api/arrays/{name}/samples still sends plain json.dumps (500 rows of numbers,
several times faster) and names its model with `documents()`.

Names: a class name is defined once under app/ (tests/test_layout.py). A shape that
is the API's form of a domain type is that type's name plus `Body` (PlanBody for the planner's
plan, DiagnosisBody for diagnosis.verdicts.Diagnosis, PresetBody, ScheduleBody ...); one with
no domain twin names what it answers (ArrayView, TuningStatus, Presets). What a client sends is
`...Request` (PlanRequest here; the routes' ArraysRequest, ScheduleRequest ...).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    # defer_build: a model's validator and serializer are built at its first use, not at import
    # (the server's RSS): bodies only a rare request sends cost nothing until then.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Ok(Body):
    """A change that needs no more answer than that it was done."""

    ok: Literal[True] = True


class Health(Body):
    """GET /healthz: Docker's HEALTHCHECK and monitors."""

    status: Literal["ok", "disk full"] = "ok"  # "disk full" answers 503: samples are not kept
    mdstat: bool  # /proc/mdstat was found
    simulated: bool  # the demo
    last_sample_error: str | None
    tuning_writable: bool
    tuning: str  # whether tuning works here and why not: the start-up log's line
    reconcile: str | None  # what start-up did with a session left open (None: there was none)


def documents(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route whose 200 body `model` describes but does not build."""
    return {200: {"model": model, "description": "OK"}}
