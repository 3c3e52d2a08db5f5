"""`GET /admin` — the operator page: HTTP Basic (ADMIN_SECRET as the password), HTTPS outside
development; the runner's history as charts, the latest refusals, the installations."""

from __future__ import annotations

from scheduling.http.guards import require_operator_login
from scheduling.http.pages.operator_page import operator_page
from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.operator.view import read_operator_view
from scheduling.services import Services


async def operator(request: Request, services: Services) -> Response:
    await require_operator_login(request, services)
    view = await read_operator_view(
        services.db, services.clock.now_ms(), services.config.max_lateness_ms
    )
    return page(operator_page(view))
