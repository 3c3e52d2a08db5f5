"""`POST /dee-wan/activate` — Dee Wan core activates an installation or rotates its token (§3)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from scheduling.domain.base_url import base_url_problem
from scheduling.domain.installation_token import seal_token
from scheduling.domain.secret_shapes import ActivationCodeField, Id, InstallationTokenField
from scheduling.http.handlers.bodies import json_object, parse
from scheduling.http.refusals import Refusal, invalid_request
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.repository import installations
from scheduling.services import Services, log


class ActivationRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    protocol: Literal["v1"]
    action: Literal["activate", "rotate"]
    code: ActivationCodeField
    installation_id: Id
    token: InstallationTokenField
    site_id: Id | None = None
    base_url: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None


async def activate(request: Request, services: Services) -> Response:
    body = parse(ActivationRequest, json_object(request))
    if body.action == "activate" and (body.site_id is None or body.base_url is None):
        raise invalid_request("activate needs site_id and base_url")

    db, crypto = services.db, services.crypto
    now = services.clock.now_ms()
    code_hash = await crypto.sha256_hex(body.code)
    code = await installations.find_code(db, code_hash)
    if code is None or not code.usable_for(body.action, body.installation_id, now):
        raise _invalid_code()

    existing = await installations.get(db, body.installation_id)
    if body.action == "activate":
        if existing is not None:
            raise _installation_exists()
    else:
        if existing is None:
            raise Refusal(404, "installation_not_found", "There is no such installation.")
        if (body.site_id is not None and body.site_id != existing.site_id) or (
            body.base_url is not None and body.base_url != existing.base_url
        ):
            raise Refusal(
                409, "installation_mismatch", "site_id or base_url differs from the stored one"
            )
    if body.base_url is not None:
        problem = base_url_problem(body.base_url, services.config)
        if problem:
            raise Refusal(422, "invalid_base_url", f"base_url {problem}")

    sealed = await seal_token(crypto, body.installation_id, body.token)
    marker = crypto.random_token()
    if body.action == "activate":
        assert body.site_id is not None
        assert body.base_url is not None
        try:
            done = await installations.activate(
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
    else:
        done = await installations.rotate(
            db,
            code_hash=code_hash,
            marker=marker,
            installation_id=body.installation_id,
            token_sealed=sealed,
            now=now,
        )
    if not done:  # another request consumed the code between our read and our write
        raise _invalid_code()
    log.info(
        "installation %s: %s",
        body.installation_id,
        "activated" if body.action == "activate" else "token rotated",
    )
    if body.action == "activate":
        return json_response({"code": "activated"}, 201)
    return json_response({"code": "rotated"}, 200)


def _invalid_code() -> Refusal:
    return Refusal(
        401, "invalid_code", "The code is unknown, expired, already used or for something else."
    )


def _installation_exists() -> Refusal:
    return Refusal(409, "installation_exists", "This installation is already activated.")
