"""`GET /static/app.css` — the one stylesheet (no inline styles, so the CSP stays strict).

Like every answer it is `no-store`: its address carries no version, so a stylesheet kept
by a browser would outlive the pages of a new deploy."""

from __future__ import annotations

from scheduling.http.html.styles import STYLES
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services

_CSS = STYLES.encode()


async def stylesheet(request: Request, services: Services) -> Response:
    return Response(
        200,
        _CSS,
        [("content-type", "text/css; charset=utf-8")],
    )
