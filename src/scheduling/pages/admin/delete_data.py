"""The operator erases everything the plugin holds for an installation, unless a schedule runs."""

from __future__ import annotations

from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.http.guards import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.ports import Database
from scheduling.repository import installations
from scheduling.services import Services, log


async def delete_installation_data(db: Database, installation_id: str) -> None:
    if not is_id(installation_id) or await installations.get(db, installation_id) is None:
        raise Refusal.explained(404, "installation_not_found")
    # The batch re-checks "none running" itself; the read first only spares a write.
    running = await installations.has_running_schedule(db, installation_id)
    if running or not await installations.delete_all_data(db, installation_id):
        if await installations.get(db, installation_id) is None:
            raise Refusal.explained(404, "installation_not_found")
        raise Refusal(409, "execution_in_progress", "a schedule is running; try again shortly")
    log.info("installation %s: all plugin data deleted", installation_id)


async def delete_data(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    installation_id = request.path_params["installation_id"]
    await delete_installation_data(services.db, installation_id)
    return json_response({"code": "deleted", "installation_id": installation_id})
