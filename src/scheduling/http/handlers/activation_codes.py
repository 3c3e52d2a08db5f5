"""`POST /admin/activation-codes` — the operator mints a one-time activation or rotation code."""

from __future__ import annotations

from scheduling.actions.activation_codes import mint_code
from scheduling.domain.localtime import rfc3339
from scheduling.domain.refusals import invalid_request
from scheduling.domain.secret_shapes import is_id
from scheduling.http.bodies import json_object
from scheduling.http.guards import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.services import Services


async def mint(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    body = json_object(request, empty_is={})
    if body and not (set(body) == {"installation_id"} and is_id(body["installation_id"])):
        raise invalid_request('body must be {} or {"installation_id": "<id>"}')
    minted = await mint_code(services, body.get("installation_id"))
    answer = {
        "code": minted.code,
        "kind": minted.kind,
        "installation_id": minted.installation_id,
        "expires_at": rfc3339(minted.expires_at),
    }
    return json_response(answer, 201)
