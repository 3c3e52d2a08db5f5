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
    db, crypto = services.db, services.crypto
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
        grant = await exchange_launch(services.http, installation.base_url, token, code)
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
