"""`GET /admin/status` — the operator sees whether the runner is alive, in one D1 round trip."""

from __future__ import annotations

from scheduling.http.handlers.operator import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import backlog, ticks
from scheduling.runner.health import FINISHED_WINDOW_MS, status_json
from scheduling.services import Services


async def runner_status(request: Request, services: Services) -> Response:
    require_operator(request, services)
    db, now = services.db, services.clock.now_ms()
    last, waiting, counts = await db.batch(
        [
            ticks.read_last(db),
            backlog.read_backlog(db, now),
            backlog.read_counts(db, now - FINISHED_WINDOW_MS),
        ]
    )
    return json_response(
        status_json(
            now,
            ticks.last_from(last.results),
            backlog.backlog_from(waiting.results),
            backlog.counts_from(counts.results),
        )
    )
