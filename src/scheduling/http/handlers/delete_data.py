"""`POST /admin/installations/{installation_id}/delete-data` — the operator erases an installation."""

from __future__ import annotations

from scheduling.domain.secret_shapes import is_id
from scheduling.http.handlers.operator import require_operator
from scheduling.http.refusals import Refusal
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import installations
from scheduling.services import Services, log


async def delete_data(request: Request, services: Services) -> Response:
    require_operator(request, services)
    installation_id = request.path_params["installation_id"]
    db = services.db
    if not is_id(installation_id) or await installations.get(db, installation_id) is None:
        raise _not_found()
    # The batch re-checks "none running" itself; the read first only spares a write.
    running = await installations.has_running_schedule(db, installation_id)
    if running or not await installations.delete_all_data(db, installation_id):
        if await installations.get(db, installation_id) is None:
            raise _not_found()
        raise Refusal(409, "execution_in_progress", "a schedule is running; try again shortly")
    log.info("installation %s: all plugin data deleted", installation_id)
    return json_response({"code": "deleted", "installation_id": installation_id})


def _not_found() -> Refusal:
    return Refusal(404, "installation_not_found", "There is no such installation.")
