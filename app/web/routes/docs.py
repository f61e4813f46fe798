"""The OpenAPI schema and its page, for whoever may read the API (MDBOOST_READ_REQUIRES_LOGIN)."""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

router = APIRouter(tags=["docs"], include_in_schema=False)


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    schema: dict[str, Any] = request.app.openapi()
    return schema


@router.get("/docs", response_class=HTMLResponse)
def docs() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title="mdboost API")
