"""`GET /admin/status` — the operator sees whether the runner is alive, in one D1 round trip."""

from __future__ import annotations

from scheduling.http.guards import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.operator.health import read_status
from scheduling.services import Services


async def runner_status(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    return json_response(await read_status(services.db, services.clock.now_ms()))
