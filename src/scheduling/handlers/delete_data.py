"""`POST /admin/installations/{installation_id}/delete-data` — the operator erases an installation."""

from __future__ import annotations

from ..repository import installations
from ..requests import Request
from ..responses import Response, error_response, json_response
from ..secret_shapes import is_id
from ..services import Services, log
from .operator import refuse_unless_operator


async def delete_data(request: Request, services: Services) -> Response:
    refused = refuse_unless_operator(request, services)
    if refused:
        return refused
    installation_id = request.path_params["installation_id"]
    db = services.db
    if not is_id(installation_id) or await installations.get(db, installation_id) is None:
        return error_response(404, "installation_not_found")
    # The batch re-checks "none running" itself; the read first only spares a write.
    running = await installations.has_running_schedule(db, installation_id)
    if running or not await installations.delete_all_data(db, installation_id):
        if await installations.get(db, installation_id) is None:
            return error_response(404, "installation_not_found")
        return error_response(
            409, "execution_in_progress", "a schedule is running; try again shortly"
        )
    log.info("installation %s: all plugin data deleted", installation_id)
    return json_response({"code": "deleted", "installation_id": installation_id})
