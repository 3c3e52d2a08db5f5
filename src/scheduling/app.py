"""The application: a route table, error mapping and the runner tick, runtime-agnostic."""

from __future__ import annotations

from . import runner
from .config import Misconfigured
from .events import emit
from .handlers import (
    activate,
    activation_codes,
    delete_data,
    manifest,
    pages,
    schedules,
    static,
    status,
)
from .localtime import rfc3339
from .requests import Request
from .responses import Response, error_response
from .routing import Route, Router
from .services import Services, log

ROUTES = [
    Route("GET", "/dee-wan/manifest.json", manifest.manifest),
    Route("POST", "/dee-wan/activate", activate.activate),
    Route("POST", "/admin/activation-codes", activation_codes.mint),
    Route("POST", "/admin/installations/{installation_id}/delete-data", delete_data.delete_data),
    Route("GET", "/admin/status", status.runner_status),
    Route("GET", "/installations/{installation_id}", pages.installation_page),
    Route("POST", "/installations/{installation_id}/schedules", schedules.create_schedule),
    Route(
        "POST",
        "/installations/{installation_id}/schedules/{schedule_id}/cancel",
        schedules.cancel_schedule,
    ),
    Route("GET", "/static/app.css", static.stylesheet),
]


class App:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.router = Router(ROUTES)

    async def handle(self, request: Request) -> Response:
        try:
            response = await self.router.dispatch(request, self.services)
        except Misconfigured as exc:
            # The variable's name only: its value may be a secret.
            log.error("misconfigured: %s %s", exc.name, exc.reason)
            response = error_response(
                500, "misconfigured", f"{exc.name} is not configured correctly"
            )
        except Exception:
            log.exception("unhandled error in %s %s", request.method, request.path)
            response = error_response(500, "internal_error")
        if request.method == "HEAD":
            response.body = b""
        return response.with_base_headers()

    async def tick(self, now: int) -> dict[str, int]:
        """One runner tick at `now` (epoch ms), as `scheduled()` and the local cron run it."""
        try:
            return await runner.tick(self.services, now)
        except Exception as exc:
            # The type only: a message could quote a row. /admin/status shows the missing ticks.
            emit("runner_tick_failed", at=rfc3339(now), error=type(exc).__name__)
            raise
