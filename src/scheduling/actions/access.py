"""What a session may reach: its installation's token, its delegation, its content."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.core_errors import read_refusal
from scheduling.dee_wan import CoreError, read_content
from scheduling.domain import associated_data, installation_token
from scheduling.domain.content import ContentRead
from scheduling.domain.installation_token import TOKEN_UNREADABLE
from scheduling.domain.refusals import Refusal
from scheduling.domain.rights import offered_by
from scheduling.ports import UnreadableSecret
from scheduling.repository import installations, sessions
from scheduling.repository.installations import Installation
from scheduling.repository.sessions import Session
from scheduling.services import Services


@dataclass(frozen=True)
class Access:
    """What a request may act with: its session, installation, Dee Wan token and delegation."""

    session: Session
    installation: Installation
    token: str
    delegation: str


async def open_token(services: Services, installation: Installation) -> str:
    """The installation's raw token, or a 503 `token_unreadable` refusal (TOKEN_KEY changed)."""
    token = await installation_token.open_token(
        services.crypto, installation.id, installation.token_sealed
    )
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
            session.delegation_sealed, associated_data.delegation(installation.id, session.id_hash)
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
    await sessions.remember_read(
        services.db,
        access.session,
        read.content.primary_id,
        offered_by(read),
        services.clock.now_ms(),
    )
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
