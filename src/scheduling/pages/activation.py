"""What Dee Wan core and the operator call to install the plugin: core activates an
installation or rotates its token (protocol §3) with a one-time code, consumed in the same
write; the operator mints such a code. Rare routes: the app imports them on their first
request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from scheduling.domain.addresses import base_url_problem
from scheduling.domain.secrets import (
    ActivationCodeField,
    Id,
    InstallationTokenField,
    is_id,
    seal_token,
)
from scheduling.domain.times import rfc3339
from scheduling.domain.wording import Refusal, invalid_request
from scheduling.http.requests import Request, json_object, parse_model
from scheduling.http.responses import Response, json_response
from scheduling.http.routing import require_operator
from scheduling.repository import installations
from scheduling.services import Services, log

# -- codes minted ----------------------------------------------------------------------------------

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


# -- activation and rotation -----------------------------------------------------------------------


class ActivationRequest(BaseModel):
    """The body core sends, shapes checked (protocol §1)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    protocol: Literal["v1"]
    action: Literal["activate", "rotate"]
    code: ActivationCodeField
    installation_id: Id
    token: InstallationTokenField
    site_id: Id | None = None
    base_url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None


async def activate_installation(services: Services, body: ActivationRequest) -> str:
    """Activate or rotate; returns what was done: `activated` or `rotated`."""
    if body.action == "activate" and (body.site_id is None or body.base_url is None):
        raise invalid_request("activate needs site_id and base_url")
    now = services.clock.now_ms()
    code_hash = await services.crypto.sha256_hex(body.code)
    code = await installations.find_code(services.db, code_hash)
    if code is None or not code.usable_for(body.action, body.installation_id, now):
        raise _invalid_code()
    await _check_installation(services, body)
    if body.base_url is not None:
        problem = base_url_problem(body.base_url, services.config)
        if problem:
            raise Refusal(422, "invalid_base_url", f"base_url {problem}")
    if not await _write(services, body, code_hash, now):
        raise _invalid_code()  # another request consumed the code between our read and our write
    activated = body.action == "activate"
    log.info(
        "installation %s: %s", body.installation_id, "activated" if activated else "token rotated"
    )
    return "activated" if activated else "rotated"


async def _check_installation(services: Services, body: ActivationRequest) -> None:
    """Activate makes a new installation; rotate needs the one it names, as stored."""
    existing = await installations.get(services.db, body.installation_id)
    if body.action == "activate":
        if existing is not None:
            raise _installation_exists()
        return
    if existing is None:
        raise Refusal.explained(404, "installation_not_found")
    if (body.site_id is not None and body.site_id != existing.site_id) or (
        body.base_url is not None and body.base_url != existing.base_url
    ):
        raise Refusal(
            409, "installation_mismatch", "site_id or base_url differs from the stored one"
        )


async def _write(services: Services, body: ActivationRequest, code_hash: str, now: int) -> bool:
    """Consume the code and write the installation in one batch; False when the code was
    taken meanwhile."""
    db, crypto = services.db, services.crypto
    sealed = await seal_token(crypto, body.installation_id, body.token)
    marker = crypto.random_token()
    if body.action == "rotate":
        return await installations.rotate(
            db,
            code_hash=code_hash,
            marker=marker,
            installation_id=body.installation_id,
            token_sealed=sealed,
            now=now,
        )
    assert body.site_id is not None
    assert body.base_url is not None
    try:
        return await installations.activate(
            db,
            code_hash=code_hash,
            marker=marker,
            installation_id=body.installation_id,
            site_id=body.site_id,
            base_url=body.base_url,
            token_sealed=sealed,
            now=now,
        )
    except installations.AlreadyExists:
        raise _installation_exists() from None


def _invalid_code() -> Refusal:
    return Refusal(
        401, "invalid_code", "The code is unknown, expired, already used or for something else."
    )


def _installation_exists() -> Refusal:
    return Refusal(409, "installation_exists", "This installation is already activated.")


async def activate(request: Request, services: Services) -> Response:
    done = await activate_installation(
        services, parse_model(ActivationRequest, json_object(request))
    )
    return json_response({"code": done}, 201 if done == "activated" else 200)
