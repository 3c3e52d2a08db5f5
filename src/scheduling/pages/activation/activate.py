"""Dee Wan core activates an installation or rotates its token (protocol §3).

The code is consumed in the same write that creates or rotates the
installation, so a code works once even when two requests race.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from scheduling.domain.base_url import base_url_problem
from scheduling.domain.installation_token import seal_token
from scheduling.domain.refusals import Refusal, invalid_request
from scheduling.domain.secret_shapes import ActivationCodeField, Id, InstallationTokenField
from scheduling.http.bodies import json_object, parse
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import installations
from scheduling.services import Services, log


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
    done = "activated" if body.action == "activate" else "rotated"
    log.info("installation %s: %s", body.installation_id, _LOGGED[done])
    return done


_LOGGED = {"activated": "activated", "rotated": "token rotated"}


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
    done = await activate_installation(services, parse(ActivationRequest, json_object(request)))
    return json_response({"code": done}, 201 if done == "activated" else 200)
