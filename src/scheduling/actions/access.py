"""Who reaches what: a launch (Dee Wan's one-time code traded for a session, protocol §4);
what a session may reach (its installation's token, its delegation, its content); a Dee Wan
failure made a refusal with a status; and calls that cost someone else, made only within
their limits (beyond them a 429 with `Retry-After`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from scheduling.dee_wan import (
    CONTENT_READ,
    LAUNCH_EXCHANGE,
    UNAVAILABLE,
    CoreError,
    exchange_launch,
    read_content,
)
from scheduling.domain import secrets
from scheduling.domain.notifications import TIMEOUT_MS
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.protocol import ContentRead, LaunchExchange, instant_ms
from scheduling.domain.schedules import offered_by
from scheduling.domain.secrets import TOKEN_UNREADABLE, has_shape, is_id
from scheduling.domain.times import DAY_MS
from scheduling.domain.wording import Refusal, explain
from scheduling.failure_throttle import WINDOW_MS, Crowded, launch_key
from scheduling.limits import VISITOR_CALLS_PER_INSTALLATION, CallLimit
from scheduling.ports import UnreadableSecret
from scheduling.repository import installations
from scheduling.repository.installations import Installation, Session
from scheduling.services import Services, log

# -- Dee Wan's failures, as refusals ---------------------------------------------------------------

NOT_OPENED = "Could not open Scheduling"
NOT_ANSWERING = "Dee Wan is not answering right now"
# Dee Wan down or slow is temporary: 503 with a hint of when to try again.
RETRY_AFTER_S = 60


def _not_opened(code: str, message: str) -> Refusal:
    return Refusal(401, code, message, title=NOT_OPENED, relaunch=True)


def _unavailable(message: str, *, relaunch: bool) -> Refusal:
    return Refusal(
        503,
        UNAVAILABLE,
        message,
        relaunch=relaunch,
        title=NOT_ANSWERING,
        headers=(("retry-after", str(RETRY_AFTER_S)),),
    )


# A content read answered off the protocol: nothing was sent, so the words are the read's.
_GARBLED_READ = (
    "Dee Wan answered about this content in a way its plugin protocol does not allow (a"
    " garbled or unexpected answer), so the page cannot be shown. Nothing was changed; try"
    " again, and if it keeps happening, tell the plugin's operator."
)


def read_refusal(error: CoreError) -> Refusal:
    """A content read failed: its code, with the status and words a page shows for it."""
    if error.code == UNAVAILABLE:
        return _unavailable(explain(UNAVAILABLE), relaunch=False)
    if error.code == UNTRUSTED:
        return Refusal(502, UNTRUSTED, _GARBLED_READ)
    return Refusal(
        CONTENT_READ.statuses.get(error.code, 403),
        error.code,
        explain(error.code),
        relaunch=error.code == "plugin_unauthorized",
    )


def launch_refusal(error: CoreError) -> Refusal:
    """A launch exchange failed: Dee Wan did not confirm it (401), or is not answering (503)."""
    if error.code == UNAVAILABLE:
        # The launch code is never offered again (it would be in a link): Dee Wan mints
        # another when Scheduling is opened from there.
        return _unavailable(
            "Dee Wan is not answering right now, so Scheduling could not check who opened it"
            " and cannot show this site's schedules yet. Nothing was changed, and waiting"
            " schedules are still sent at their time. Try again in a minute.",
            relaunch=True,
        )
    return _not_opened(
        error.code, LAUNCH_EXCHANGE.told.get(error.code, "Dee Wan did not confirm this launch.")
    )


# -- what a session reaches ------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """What a request may act with: its session, installation, Dee Wan token and delegation."""

    session: Session
    installation: Installation
    token: str
    delegation: str


async def open_token(services: Services, installation: Installation) -> str:
    """The installation's raw token, or a 503 `token_unreadable` refusal (TOKEN_KEY changed)."""
    token = await secrets.open_token(services.crypto, installation.id, installation.token_sealed)
    if token is None:
        raise Refusal.explained(503, TOKEN_UNREADABLE)
    return token


async def open_access(services: Services, session: Session) -> Access:
    installation = await installations.get(services.db, session.installation_id)
    if installation is None:
        raise Refusal(404, "installation_not_found", "This installation's data was deleted.")
    token = await open_token(services, installation)
    try:
        delegation = await services.crypto.open(
            session.delegation_sealed, secrets.delegation(installation.id, session.id_hash)
        )
    except UnreadableSecret:
        raise Refusal(
            401, "session_expired", "Your Scheduling session can no longer be used.", relaunch=True
        ) from None
    return Access(session, installation, token, delegation)


async def read_content_with(services: Services, access: Access, content_id: str) -> ContentRead:
    """One content, as the session's person sees it (their delegation); raises `CoreError`."""
    try:
        return await read_content(
            services.http, access.installation.base_url, access.token, access.delegation, content_id
        )
    except CoreError as error:
        await note_refusal(services, access.installation.id, error)
        raise


async def note_refusal(services: Services, installation_id: str, error: CoreError) -> None:
    """Dee Wan refused a call with the installation's token: `plugin_unauthorized` means it no
    longer accepts the installation, and every session of it is refused from now on."""
    if error.code == "plugin_unauthorized":
        await installations.mark_unauthorized(services.db, installation_id, services.clock.now_ms())


async def read_launched_content(services: Services, access: Access) -> ContentRead:
    """Read the launched content, and keep with the session what it says: the content's
    primary id and the changes Dee Wan offers this person now (what a cancel is judged by)."""
    assert access.session.content_id is not None
    try:
        read = await read_content_with(services, access, access.session.content_id)
    except CoreError as error:
        raise read_refusal(error) from None
    offered, now = offered_by(read), services.clock.now_ms()
    primary = read.content.primary_id
    await installations.remember_read(services.db, access.session, primary, offered, now)
    return read


# An id no content has (ids are 1–64 of [A-Za-z0-9_-]): a manage session, which has no content
# of its own, reads it to ask Dee Wan whether the token and the person's delegation still work.
STANDING_PROBE = "scheduling-standing-check"


async def confirm_standing(services: Services, session: Session) -> ContentRead | None:
    """One call to Dee Wan before something that outlives the session is made (an agent key,
    a notification endpoint): a read with the person's delegation, of the session's content
    (what Dee Wan offers them there now, which it returns) or, for a manage session, of
    `STANDING_PROBE`, which Dee Wan answers `content_not_found` while both still work. A
    revoked token (every session and key of the installation then ends), a person Dee Wan no
    longer delegates, or a Dee Wan that does not answer: nothing is made."""
    access = await open_access(services, session)
    try:
        return await read_content_with(services, access, session.content_id or STANDING_PROBE)
    except CoreError as error:
        if session.content_id is None and error.code == "content_not_found":
            return None
        raise read_refusal(error) from None


# -- calls within their limits ---------------------------------------------------------------------

# Under way until it answers, or for its timeout and a margin should the runtime die mid-call.
_HOLD_MS = TIMEOUT_MS + 5_000
ENDPOINT_CALLS = CallLimit(per_minute=5, at_once=1, hold_ms=_HOLD_MS)
# What the persons of one installation may hold of the visitors' pool together.
INSTALLATION_CALLS = CallLimit(
    per_minute=4 * ENDPOINT_CALLS.per_minute,
    at_once=VISITOR_CALLS_PER_INSTALLATION,
    hold_ms=_HOLD_MS,
)

Limits = Sequence[tuple[str, CallLimit]]


def endpoint_calls(installation_id: str, person_id: str) -> Limits:
    """The limits a call a person makes to an endpoint is counted against."""
    return (
        (f"endpoint_calls:{installation_id}:{person_id}", ENDPOINT_CALLS),
        (f"visitor_calls:{installation_id}", INSTALLATION_CALLS),
    )


def creates_key(installation_id: str, person_id: str) -> str:
    return f"creates:{installation_id}:{person_id}"


@asynccontextmanager
async def limited(
    services: Services, limits: Limits, refusal: Callable[[int], Refusal]
) -> AsyncIterator[None]:
    """Within the block the call holds its place under each of `limits` (key, limit);
    `refusal(wait_ms)` is raised when one has none, and the places taken for it are given
    back uncounted."""
    taken: list[tuple[installations.Taken, CallLimit]] = []
    for key, limit in limits:
        place = await installations.take(
            services.db, key, limit, services.crypto.random_token(), services.clock.now_ms()
        )
        if not isinstance(place, installations.Taken):
            for given, _ in taken:
                await installations.give_back(services.db, given)
            raise refusal(place)
        taken.append((place, limit))
    try:
        yield
    finally:
        for place, limit in taken:
            if limit.at_once is None:
                continue
            try:
                await installations.release(services.db, place, services.clock.now_ms())
            except Exception as exc:  # the place frees itself after `hold_ms`
                log.warning("a call's place was not given back: %s", type(exc).__name__)


# -- a launch --------------------------------------------------------------------------------------

SESSION_TTL_MS = 30 * 60 * 1000


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
    wait_s = throttle.retry_after_s(key)
    if wait_s is not None:
        raise _too_many_launches(
            "Too many launch links failed from your address in the last minute, so Scheduling "
            "stopped checking them for a while.",
            f"Wait {wait_s} second{'s' if wait_s != 1 else ''}",
            wait_s,
        )
    try:
        with throttle.exchanging(key):
            return await _launch(services, installation_id, code, key)
    except Crowded:
        raise _too_many_launches(
            "Too many launches from your address at once.", "Wait a second", 1
        ) from None


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
        grant = await _grant(services, installation, token, code)
        now = services.clock.now_ms()
        delegation_expires = instant_ms(grant.delegation.expires_at)
        expires_at = min(now + SESSION_TTL_MS, delegation_expires)
        if expires_at <= now:
            raise _not_opened(
                "delegation_expired", "Dee Wan's permission for this launch has already expired."
            )
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
        raise _not_opened("untrusted_response", "Dee Wan's answer did not match this installation.")
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
    session = Session(
        id_hash=id_hash,
        installation_id=installation_id,
        csrf_token=crypto.random_token(),
        person_id=grant.person.id,
        person_name=grant.person.name,
        context_kind=grant.context.kind,
        content_id=grant.context.content_id if grant.context.kind == "content" else None,
        content_primary_id=None,
        delegation_sealed=await crypto.seal(
            grant.delegation.token, secrets.delegation(installation_id, id_hash)
        ),
        expires_at=expires_at,
        offered=None,
        tab=tab,
    )
    await installations.create(
        services.db,
        session,
        delegation_expires_at=delegation_expires,
        now=now,
        forget_before=now - services.config.retention_days * DAY_MS,
    )
    return session_id, tab
