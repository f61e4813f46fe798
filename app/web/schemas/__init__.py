"""The JSON API's response bodies as pydantic models, for the OpenAPI page (/docs, /openapi.json).

They document; they do not filter. Routes name them in `responses=`, so a body goes out exactly as
the code builds it (no second serialisation on the polls), and tests/web/test_schemas.py checks
that real answers validate against them, unknown keys refused.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def documents(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route whose 200 body `model` describes."""
    return {200: {"model": model, "description": "OK"}}
