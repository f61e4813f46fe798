"""The OpenAPI schema and its page, for whoever may read the API (MDBOOST_READ_REQUIRES_LOGIN).

Swagger UI is served from static/vendor (pinned, no CDN), started by static/docs.js, so the
strict CSP holds; ReDoc is not offered (it needs a CDN and a web worker from blob:).
"""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(tags=["docs"], include_in_schema=False)

DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>mdboost API</title>
  <link rel="icon" href="/static/icon.svg" type="image/svg+xml">
  <link rel="stylesheet" href="/static/vendor/swagger-ui.css">
  <script src="/static/vendor/swagger-ui-bundle.js" defer></script>
  <script src="/static/docs.js" defer></script>
</head>
<body>
  <p><a href="/">Back to mdboost</a></p>
  <div id="swagger-ui" data-openapi="/openapi.json"></div>
</body>
</html>
"""


@router.get("/openapi.json")
def openapi(request: Request) -> dict[str, Any]:
    schema: dict[str, Any] = request.app.openapi()
    return schema


@router.get("/docs", response_class=HTMLResponse)
def docs() -> HTMLResponse:
    return HTMLResponse(DOCS_PAGE)
