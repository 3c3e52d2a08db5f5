"""A launch: trade Dee Wan's one-time launch code for a session (protocol §4).

The code never appears in a page, a log line or the redirect: any failure is
a refusal that explains what to do, with no session started. Exchanges that
start no session are counted per client and installation, and a client past
the limit is refused without a call to Dee Wan (`failure_throttle.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import note_refusal, open_token
from scheduling.actions.core_errors import NOT_OPENED, launch_refusal
from scheduling.dee_wan import CoreError, exchange_launch
from scheduling.domain import associated_data
from scheduling.domain.launch_grant import LaunchExchange
from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import has_shape, is_id
from scheduling.domain.wire import instant_ms
from scheduling.failure_throttle import WINDOW_MS, Crowded, FailureThrottle, launch_key
from scheduling.repository import installations, sessions
from scheduling.repository.installations import Installation
from scheduling.services import Services, log

SESSION_TTL_MS = 30 * 60 * 1000
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Launched:
    """A session started: the cookie's value (a secret: never logged), how long it lasts, and
    its public handle (`tab`), which its pages' addresses carry."""

    installation_id: str
    session_id: str
    max_age_s: int
    tab: str


async def launch(
    services: Services, installation_id: str, code: str, client: str | None
) -> Launched:
    """`client` is who asks, as the runtime knows it (None when it cannot tell)."""
    if not is_id(installation_id) or not has_shape("launch_code", code):
        raise Refusal(
            400,
            "invalid_launch",
            "The launch link is incomplete or damaged.",
            title="This link is not a valid launch",
            relaunch=True,
        )
    # Held back for failed exchanges: answered without a call to Dee Wan.
    throttle = services.failure_throttle
    key = launch_key(installation_id, client)
    _refuse_if_held(throttle, key)
    try:
        with throttle.exchanging(key):
            return await _launch(services, installation_id, code, key)
    except Crowded:
        raise _too_many_launches(
            "Too many launches from your address at once.", "Wait a second", 1
        ) from None


def _refuse_if_held(throttle: FailureThrottle, key: str) -> None:
    wait_s = throttle.retry_after_s(key)
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


async def _launch(services: Services, installation_id: str, code: str, key: str) -> Launched:
    installation = await installations.get(services.db, installation_id)
    if installation is None:
        raise Refusal(
            404,
            "installation_not_found",
            "Scheduling is not installed for this Dee Wan site (or its data was deleted).",
            title="Unknown installation",
        )
    token = await open_token(services, installation)
    try:
        return await _exchange(services, installation, token, code)
    except Refusal:
        # Dee Wan was called and no session started: one more failure for this client.
        if await services.failure_throttle.failed(key):
            log.warning(
                "installation %s: a client's launches are held back for %d s "
                "after too many failed exchanges",
                installation_id,
                WINDOW_MS // 1000,
            )
        raise


async def _exchange(
    services: Services, installation: Installation, token: str, code: str
) -> Launched:
    """Exchange the code and start the session; a Refusal when no session starts."""
    grant = await _grant(services, installation, token, code)
    now = services.clock.now_ms()
    delegation_expires = instant_ms(grant.delegation.expires_at)
    expires_at = min(now + SESSION_TTL_MS, delegation_expires)
    if expires_at <= now:
        raise Refusal(
            401,
            "delegation_expired",
            "Dee Wan's permission for this launch has already expired.",
            title=NOT_OPENED,
            relaunch=True,
        )
    session_id, tab = await _start_session(services, grant, delegation_expires, now, expires_at)
    log.info(
        "installation %s: %s session started for %s",
        installation.id,
        grant.context.kind,
        grant.person.id,
    )
    return Launched(installation.id, session_id, (expires_at - now) // 1000, tab)


async def _grant(
    services: Services, installation: Installation, token: str, code: str
) -> LaunchExchange:
    """Dee Wan's grant for `code`, checked to be for this installation."""
    try:
        grant = await exchange_launch(services.http, installation.base_url, token, code)
    except CoreError as error:
        log.info("installation %s: launch exchange failed: %s", installation.id, error.code)
        await note_refusal(services, installation.id, error)
        raise launch_refusal(error) from None
    if grant.installation_id != installation.id:
        log.warning("installation %s: launch answer named another installation", installation.id)
        raise Refusal(
            401,
            "untrusted_response",
            "Dee Wan's answer did not match this installation.",
            title=NOT_OPENED,
            relaunch=True,
        )
    return grant


async def _start_session(
    services: Services, grant: LaunchExchange, delegation_expires: int, now: int, expires_at: int
) -> tuple[str, str]:
    """Store the session (its id hashed, the delegation sealed to it); returns its id and
    its handle."""
    crypto = services.crypto
    session_id, tab = crypto.random_token(), crypto.random_token()[:12]
    id_hash = await crypto.sha256_hex(session_id)
    installation_id = grant.installation_id
    await sessions.create(
        services.db,
        id_hash=id_hash,
        installation_id=installation_id,
        csrf_token=crypto.random_token(),
        person_id=grant.person.id,
        person_name=grant.person.name,
        context_kind=grant.context.kind,
        content_id=grant.context.content_id if grant.context.kind == "content" else None,
        delegation_sealed=await crypto.seal(
            grant.delegation.token, associated_data.delegation(installation_id, id_hash)
        ),
        delegation_expires_at=delegation_expires,
        now=now,
        expires_at=expires_at,
        tab=tab,
        forget_before=now - services.config.retention_days * DAY_MS,
    )
    return session_id, tab
