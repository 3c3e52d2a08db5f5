"""`GET /installations/{id}?dee_wan_launch=dwl_…` — exchange the launch code, start a session (§4).

The code never appears in a page, a log line or the redirect: any failure is
a page that explains what to do, with no session set.
"""

from __future__ import annotations

from datetime import datetime

from scheduling.dee_wan import CoreError, exchange_launch
from scheduling.domain import associated_data
from scheduling.domain.secret_shapes import has_shape, is_id
from scheduling.http.guards import SESSION_TTL_MS, session_cookie
from scheduling.http.handlers.access import open_token
from scheduling.http.pages.wording import explain
from scheduling.http.refusals import Refusal
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.launch_throttle import WINDOW_MS, Crowded, LaunchThrottle
from scheduling.repository import installations, sessions
from scheduling.services import Services, log

NOT_OPENED = "Could not open Scheduling"


async def launch(request: Request, services: Services, code: str) -> Response:
    installation_id = request.path_params["installation_id"]
    if not is_id(installation_id) or not has_shape("launch_code", code):
        raise Refusal(
            400,
            "invalid_launch",
            "The launch link is incomplete or damaged.",
            title="This link is not a valid launch",
            relaunch=True,
        )
    # Held back for failed exchanges: answered without a call to Dee Wan (launch_throttle.py).
    throttle, client = services.launch_throttle, request.client
    _refuse_if_held(throttle, installation_id, client)
    try:
        with throttle.exchanging(installation_id, client):
            return await _launch(services, installation_id, client, code)
    except Crowded:
        raise _too_many_launches(
            "Too many launches from your address at once.", "Wait a second", 1
        ) from None


def _refuse_if_held(throttle: LaunchThrottle, installation_id: str, client: str | None) -> None:
    wait_s = throttle.retry_after_s(installation_id, client)
    if wait_s is not None:
        raise _too_many_launches(
            "Too many launch links failed from your address in the last minute, so Scheduling "
            "stopped checking them for a while.",
            f"Wait {wait_s} second{'s' if wait_s != 1 else ''}",
            wait_s,
        )


def _too_many_launches(why: str, wait: str, wait_s: int) -> Refusal:
    return Refusal(
        429,
        "too_many_launches",
        f"{why} {wait}, then try again.",
        title="Too many attempts",
        relaunch=True,
        headers=[("retry-after", str(wait_s))],
    )


async def _launch(
    services: Services, installation_id: str, client: str | None, code: str
) -> Response:
    db = services.db
    installation = await installations.get(db, installation_id)
    if installation is None:
        raise Refusal(
            404,
            "installation_not_found",
            "Scheduling is not installed for this Dee Wan site (or its data was deleted).",
            title="Unknown installation",
        )
    token = await open_token(services, installation)
    try:
        return await _exchange(services, installation_id, installation.base_url, token, code)
    except Refusal:
        # Dee Wan was called and no session started: one more failure for this client.
        if await services.launch_throttle.failed(installation_id, client):
            log.warning(
                "installation %s: a client's launches are held back for %d s "
                "after too many failed exchanges",
                installation_id,
                WINDOW_MS // 1000,
            )
        raise


async def _exchange(
    services: Services, installation_id: str, base_url: str, token: str, code: str
) -> Response:
    """Exchange the code and start the session; a Refusal when no session starts."""
    db, crypto = services.db, services.crypto
    try:
        grant = await exchange_launch(services.http, base_url, token, code)
    except CoreError as exc:
        log.info("installation %s: launch exchange failed: %s", installation_id, exc.code)
        message = {
            "launch_not_found": "This launch link was already used or has expired (links last 60 seconds).",
            "plugin_unauthorized": explain("plugin_unauthorized"),
            "dee_wan_unreachable": explain("dee_wan_unreachable"),
        }.get(exc.code, "Dee Wan did not confirm this launch.")
        raise Refusal(
            401 if exc.code != "dee_wan_unreachable" else 502,
            exc.code,
            message,
            title=NOT_OPENED,
            relaunch=True,
        ) from None
    if grant.installation_id != installation_id:
        log.warning("installation %s: launch answer named another installation", installation_id)
        raise Refusal(
            401,
            "untrusted_response",
            "Dee Wan's answer did not match this installation.",
            title=NOT_OPENED,
            relaunch=True,
        )

    now = services.clock.now_ms()
    delegation_expires = int(
        datetime.fromisoformat(grant.delegation.expires_at.replace("Z", "+00:00")).timestamp()
        * 1000
    )
    expires_at = min(now + SESSION_TTL_MS, delegation_expires)
    if expires_at <= now:
        raise Refusal(
            401,
            "delegation_expired",
            "Dee Wan's permission for this launch has already expired.",
            title=NOT_OPENED,
            relaunch=True,
        )
    session_id = crypto.random_token()
    id_hash = await crypto.sha256_hex(session_id)
    content_id = grant.context.content_id if grant.context.kind == "content" else None
    await sessions.create(
        db,
        id_hash=id_hash,
        installation_id=installation_id,
        csrf_token=crypto.random_token(),
        person_id=grant.person.id,
        person_name=grant.person.name,
        context_kind=grant.context.kind,
        content_id=content_id,
        delegation_sealed=await crypto.seal(
            grant.delegation.token, associated_data.delegation(installation_id, id_hash)
        ),
        delegation_expires_at=delegation_expires,
        now=now,
        expires_at=expires_at,
    )
    log.info(
        "installation %s: %s session started for %s",
        installation_id,
        grant.context.kind,
        grant.person.id,
    )
    response = redirect(f"/installations/{installation_id}")
    response.headers.append(("set-cookie", session_cookie(session_id, (expires_at - now) // 1000)))
    return response
