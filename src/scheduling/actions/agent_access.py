"""Agent keys: a person mints one for an agent on their page, sees it once, lists and revokes
them; the MCP endpoint finds the live key a request carries.

A key acts for the person who minted it and never for more: a manage launch's key reaches the
installation, a content launch's key that content only, and proposes only the changes Dee Wan
offered the person on their page (none, for a viewer: their key only reads).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import confirm_standing
from scheduling.domain.refusals import Refusal
from scheduling.domain.rights import offered_by
from scheduling.domain.secret_shapes import has_shape, is_id
from scheduling.repository import agent_keys, proposals
from scheduling.repository.agent_keys import AgentKey
from scheduling.repository.proposals import Proposal
from scheduling.repository.sessions import Session
from scheduling.services import Services, log

DAY_MS = 24 * 60 * 60 * 1000
DEFAULT_DAYS, MAX_DAYS = 7, 30
MAX_NAME_CHARS = 80
MAX_LIVE_KEYS = 20  # an installation's usable keys at once


@dataclass(frozen=True)
class MintedKey:
    """An agent key just minted: its record, and its secret shown once."""

    key: AgentKey
    secret: str  # the one place the raw key exists: shown once, stored only as its hash


def _days(text: str) -> int:
    days = int(text) if text.isascii() and text.isdigit() and len(text) <= 2 else 0
    if not 1 <= days <= MAX_DAYS:
        raise Refusal(
            422, "invalid_key_expiry", f"A key lasts from 1 to {MAX_DAYS} days; choose how many."
        )
    return days


def _name(text: str) -> str:
    name = " ".join(text.split())
    if not name or len(name) > MAX_NAME_CHARS:
        raise Refusal(
            422,
            "invalid_key_name",
            f"Name the agent this key is for, in at most {MAX_NAME_CHARS} characters.",
        )
    return name


async def mint_key(services: Services, session: Session, name: str, days: str) -> MintedKey:
    """A new key for the session's person, lasting `days` (1–30, 7 when not given), made only
    once Dee Wan has confirmed that the installation's token and the person's delegation
    still work (`confirm_standing`); a content key may propose what Dee Wan offers them now."""
    key_name, lasting = _name(name), _days(days.strip() or str(DEFAULT_DAYS))
    keys = await agent_keys.list_for(services.db, session.installation_id, services.clock.now_ms())
    if len(keys) >= MAX_LIVE_KEYS:
        raise Refusal(
            409,
            "too_many_agent_keys",
            f"An installation has at most {MAX_LIVE_KEYS} agent keys: revoke one first.",
        )
    read = await confirm_standing(services, session)
    now = services.clock.now_ms()
    key = AgentKey(
        id="agk_" + services.crypto.random_token()[:22],
        installation_id=session.installation_id,
        name=key_name,
        person_id=session.person_id,
        person_name=session.person_name,
        content_id=None if read is None else read.content.primary_id,
        offered=None if read is None else offered_by(read),
        created_at=now,
        expires_at=now + lasting * DAY_MS,
        revoked_at=None,
        last_used_at=None,
        checked_at=now,
    )
    secret = "dwk_" + services.crypto.random_token()
    await agent_keys.insert(services.db, key, await services.crypto.sha256_hex(secret))
    log.info("installation %s: agent key %s minted", key.installation_id, key.id)
    return MintedKey(key, secret)


async def keys_of(services: Services, session: Session) -> list[AgentKey]:
    """The keys a page lists: all of the installation's on the manage view, on a content page
    the person's own that reach that content (a key minted on another reaches only that one)."""
    keys = await agent_keys.list_for(services.db, session.installation_id, services.clock.now_ms())
    if session.context_kind == "manage":
        return keys
    content = session.content_primary_id or session.content_id or ""
    return [k for k in keys if k.person_id == session.person_id and k.reaches(content)]


async def revoke_key(services: Services, session: Session, key_id: str) -> None:
    """At once: the key's next request is refused. A content page revokes its person's own."""
    mine = {key.id for key in await keys_of(services, session)}
    now = services.clock.now_ms()
    if not is_id(key_id) or key_id not in mine:
        raise Refusal(404, "agent_key_not_found", "There is no such agent key to revoke.")
    await agent_keys.revoke(services.db, session.installation_id, key_id, now)
    log.info("installation %s: agent key %s revoked", session.installation_id, key_id)


async def key_for(services: Services, secret: str | None) -> AgentKey | None:
    """The live key a request carries, or None (malformed, unknown, expired, revoked, or its
    installation uninstalled): the caller answers 401 for all alike."""
    if secret is None or not has_shape("agent_key", secret):
        return None
    digest = await services.crypto.sha256_hex(secret)
    return await agent_keys.find_live(services.db, digest, services.clock.now_ms())


@dataclass(frozen=True)
class PageAgents:
    """What a page shows of the agents: the proposals waiting for a person (its content's, or
    on the manage view all of them) and the agent keys."""

    proposals: list[Proposal]
    keys: list[AgentKey]
    now_ms: int


async def page_agents(services: Services, session: Session) -> PageAgents:
    now = services.clock.now_ms()
    content = None
    if session.context_kind != "manage":
        content = session.content_primary_id or session.content_id or ""
    waiting = await proposals.pending(services.db, session.installation_id, content, now)
    return PageAgents(waiting, await keys_of(services, session), now)
