"""`POST /admin/activation-codes` — the operator mints a one-time activation or rotation code."""

from __future__ import annotations

from typing import Any

from scheduling.domain.localtime import rfc3339
from scheduling.domain.secret_shapes import is_id
from scheduling.http.handlers.bodies import json_object
from scheduling.http.handlers.operator import require_operator
from scheduling.http.refusals import Refusal, invalid_request
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import installations
from scheduling.services import Services, log

CODE_TTL_MS = 15 * 60 * 1000


async def mint(request: Request, services: Services) -> Response:
    require_operator(request, services)
    body = json_object(request, empty_is={})
    if body and not _is_rotation_request(body):
        raise invalid_request('body must be {} or {"installation_id": "<id>"}')
    installation_id: str | None = body.get("installation_id")
    if installation_id and await installations.get(services.db, installation_id) is None:
        raise Refusal(404, "installation_not_found", "There is no such installation.")

    crypto = services.crypto
    code = "dwa_" + crypto.random_token()
    kind = "rotate" if installation_id else "activate"
    now = services.clock.now_ms()
    await installations.insert_code(
        services.db, await crypto.sha256_hex(code), kind, installation_id, now, CODE_TTL_MS
    )
    log.info(
        "minted a%s code%s",
        "n activation" if kind == "activate" else " rotation",
        f" for installation {installation_id}" if installation_id else "",
    )
    return json_response(
        {
            "code": code,
            "kind": kind,
            "installation_id": installation_id,
            "expires_at": rfc3339(now + CODE_TTL_MS),
        },
        201,
    )


def _is_rotation_request(body: dict[str, Any]) -> bool:
    return set(body) == {"installation_id"} and is_id(body["installation_id"])
