"""Activation codes and `/dee-wan/activate` calls, as the operator and Dee Wan make them."""

from __future__ import annotations

import json
import secrets
from typing import Any

from scheduling.app import App
from scheduling.http.responses import Response
from tests.support.app import OPERATOR, body, call


def token(prefix: str = "dwp_") -> str:
    return prefix + secrets.token_urlsafe(32)


async def mint(app: App, installation_id: str | None = None) -> str:
    payload = (
        b""
        if installation_id is None
        else json.dumps({"installation_id": installation_id}).encode()
    )
    response = await call(app, "POST", "/admin/activation-codes", headers=OPERATOR, body=payload)
    assert response.status == 201, response.body
    return str(body(response)["code"])


def activation(code: str, /, **overrides: Any) -> dict[str, Any]:
    payload = {
        "protocol": "v1",
        "action": "activate",
        "code": code,
        "installation_id": "ins_1",
        "site_id": "site_1",
        "base_url": "https://cms.example",
        "token": token(),
    }
    payload.update(overrides)
    return {k: v for k, v in payload.items() if v is not None}


async def post_activate(app: App, payload: dict[str, Any] | bytes) -> Response:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await call(
        app, "POST", "/dee-wan/activate", headers={"content-type": "application/json"}, body=raw
    )


async def install(
    app: App, installation_id: str = "ins_1", base_url: str = "https://cms.example"
) -> str:
    """Activate an installation; returns its raw token."""
    raw_token = token()
    response = await post_activate(
        app,
        activation(
            await mint(app), installation_id=installation_id, base_url=base_url, token=raw_token
        ),
    )
    assert response.status == 201, response.body
    return raw_token
