"""What a session may reach: its installation's token, its delegation, its content."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.dee_wan import ContentRead, CoreError, read_content
from scheduling.domain import associated_data, installation_token
from scheduling.domain.installation_token import TOKEN_UNREADABLE
from scheduling.http.pages.wording import explain
from scheduling.http.refusals import Refusal
from scheduling.ports import UnreadableSecret
from scheduling.repository import installations, sessions
from scheduling.repository.installations import Installation
from scheduling.repository.sessions import Session
from scheduling.services import Services


@dataclass(frozen=True)
class Access:
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
        raise Refusal(503, TOKEN_UNREADABLE, explain(TOKEN_UNREADABLE))
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


async def read_session_content(services: Services, access: Access) -> ContentRead:
    """Read the launched content with the person's delegation; refusals become pages."""
    assert access.session.content_id is not None
    try:
        read = await read_content(
            services.http,
            access.installation.base_url,
            access.token,
            access.delegation,
            access.session.content_id,
        )
    except CoreError as exc:
        status = {
            "dee_wan_unreachable": 502,
            "untrusted_response": 502,
            "plugin_unauthorized": 401,
            "content_not_found": 404,
        }.get(exc.code, 403)
        raise Refusal(
            status, exc.code, explain(exc.code), relaunch=exc.code == "plugin_unauthorized"
        ) from None
    if access.session.content_primary_id is None:
        await sessions.remember_primary(
            services.db, access.session.id_hash, read.content.primary_id
        )
    return read
