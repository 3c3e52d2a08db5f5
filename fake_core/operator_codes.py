"""Acting as the plugin's operator: mint a one-time code for the home page's one-click buttons.

`POST {plugin_origin}/admin/activation-codes` with the operator's bearer
secret. The secret goes to that plugin only; no message here carries it.
"""

from __future__ import annotations

import json

import httpx

from fake_core.context import Context
from fake_core.wire import has_shape, is_id, parse_json_object
from scheduling.ports import TransportError

# What a failed call to the plugin raises: the socket (OSError), httpx, or the in-process port.
UNREACHABLE = (OSError, httpx.HTTPError, httpx.InvalidURL, TransportError)


class CodeNotMinted(Exception):
    """Why no code came back, in plain words; never carries the secret."""


async def mint_code(ctx: Context, installation_id: str | None) -> str:
    """An activation code, or a rotation code for `installation_id`."""
    secret, origin = ctx.plugin_admin_secret, ctx.plugin_origin
    if secret is None:
        raise CodeNotMinted(
            "One-click codes need FAKE_CORE_PLUGIN_ADMIN_SECRET when the fake core starts; "
            "paste a code instead."
        )
    caller = ctx.admin_caller or ctx.core.plugin_caller
    if caller is None:
        raise CodeNotMinted("This fake core has no way to call the plugin.")
    headers = {"authorization": f"Bearer {secret}"}
    body = None
    if installation_id is not None:
        headers["content-type"] = "application/json"
        body = json.dumps({"installation_id": installation_id}).encode()
    try:
        status, _, answer = await caller("POST", f"{origin}/admin/activation-codes", headers, body)
    except UNREACHABLE as exc:
        raise CodeNotMinted(
            f"Could not reach the plugin at {origin} to mint a code ({type(exc).__name__})."
        ) from None
    data = parse_json_object(answer)
    code = data.get("code") if data is not None else None
    if status in (200, 201) and has_shape("activation_code", code):
        assert isinstance(code, str)
        return code
    # An error code is an id; anything else (a code of the wrong kind, text) is not shown.
    shown = f", code {code}" if is_id(code) and not str(code).startswith("dw") else ""
    if status in (401, 403):
        raise CodeNotMinted(
            f"The plugin at {origin} refused the operator secret (status {status}{shown}); "
            "check FAKE_CORE_PLUGIN_ADMIN_SECRET."
        )
    if status in (200, 201):
        raise CodeNotMinted(f"The plugin at {origin} answered {status} without an activation code.")
    raise CodeNotMinted(f"The plugin at {origin} did not mint a code (status {status}{shown}).")
