"""`POST /admin/installations/{installation_id}/delete-data` — the operator erases an installation."""

from __future__ import annotations

from scheduling.actions.delete_data import delete_installation_data
from scheduling.http.guards import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.services import Services


async def delete_data(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    installation_id = request.path_params["installation_id"]
    await delete_installation_data(services.db, installation_id)
    return json_response({"code": "deleted", "installation_id": installation_id})
