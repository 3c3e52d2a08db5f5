"""The operator mints a one-time activation code, or a rotation code for one installation."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.localtime import rfc3339
from scheduling.domain.refusals import Refusal, invalid_request
from scheduling.domain.secret_shapes import is_id
from scheduling.http.bodies import json_object
from scheduling.http.guards import require_operator
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import installations
from scheduling.services import Services, log

CODE_TTL_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class MintedCode:
    code: str  # the one place the raw code exists: answered once, stored only as its hash
    kind: str  # activate | rotate
    installation_id: str | None
    expires_at: int


async def mint_code(services: Services, installation_id: str | None) -> MintedCode:
    """An activation code, or with `installation_id` a rotation code for that one only."""
    if installation_id and await installations.get(services.db, installation_id) is None:
        raise Refusal.explained(404, "installation_not_found")
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
    return MintedCode(code, kind, installation_id, now + CODE_TTL_MS)


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
