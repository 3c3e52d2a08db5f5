"""`GET /static/app.css` — the one stylesheet (no inline styles, so the CSP stays strict)."""

from __future__ import annotations

from scheduling.http.pages.styles import STYLES
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services

_CSS = STYLES.encode()


async def stylesheet(request: Request, services: Services) -> Response:
    return Response(
        200,
        _CSS,
        [("content-type", "text/css; charset=utf-8"), ("cache-control", "public, max-age=3600")],
    )
