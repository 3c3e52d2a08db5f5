"""The operator's routes beside /admin/status: `GET /healthz` for uptime monitors (no
authentication, nothing but ok, stalled or code_behind_database) and `GET /admin/metrics` for
Prometheus."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from scheduling.http.guards import require_operator
from scheduling.http.prometheus import exposition
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.operator.health import read_health, read_status
from scheduling.operator.metrics import Family, read_metrics
from scheduling.ports import Database
from scheduling.services import Services


async def healthz(request: Request, services: Services) -> Response:
    """200 `{"status":"ok"}`, or 503 `{"status":"stalled"}` or `"code_behind_database"`:
    one statement, indexes only."""
    status = await read_health(services.db, services.clock.now_ms())
    return json_response({"status": status}, 200 if status == "ok" else 503)


async def metrics(
    request: Request,
    services: Services,
    more: Callable[[Database], Awaitable[list[Family]]] | None = None,
) -> Response:
    """The runner's families, then `more`'s (the agents' calls, which the app passes in)."""
    await require_operator(request, services)
    families = await read_metrics(services.db, services.clock.now_ms())
    extra = await more(services.db) if more is not None else []
    return exposition([*families, *extra])


async def runner_status(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    return json_response(await read_status(services.db, services.clock.now_ms()))
