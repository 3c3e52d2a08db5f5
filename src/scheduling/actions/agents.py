"""Agents propose, people decide. A person mints an agent key (seen once, listed, revoked)
that acts for them and never for more; with it an agent proposes a schedule and may withdraw
it; a person confirms it on their page (the ordinary create, with their own session) or
declines it. A proposal pins nothing and publishes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from scheduling.actions.access import confirm_standing
from scheduling.actions.schedules import Created, ScheduleForm, create_schedule
from scheduling.domain.notifications import ProposalEvent
from scheduling.domain.schedules import ReleaseStatus, offered_by
from scheduling.domain.secrets import has_shape, is_id
from scheduling.domain.times import Fold, ResolvedTime, Retry, TimeRefusal, resolve_local_time
from scheduling.domain.wording import Refusal
from scheduling.repository import agents, releases
from scheduling.repository.agents import Proposal, pending
from scheduling.repository.installations import (
    AgentKey,
    Session,
    find_live_key,
    insert_key,
    list_for,
    revoke,
)
from scheduling.services import Services, log

# -- agent keys ------------------------------------------------------------------------------------

DAY_MS = 24 * 60 * 60 * 1000
DEFAULT_DAYS, MAX_DAYS = 7, 30
MAX_NAME_CHARS = 80
MAX_LIVE_KEYS = 20  # an installation's usable keys at once


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


async def mint_key(
    services: Services, session: Session, name: str, days: str
) -> tuple[AgentKey, str]:
    """A new key for the session's person, lasting `days` (1–30, 7 when not given), made only
    once Dee Wan has confirmed that the installation's token and the person's delegation
    still work (`confirm_standing`); a content key may propose what Dee Wan offers them now.
    With it, its secret: the one place the raw key exists, shown once, stored as its hash."""
    key_name, lasting = _name(name), _days(days.strip() or str(DEFAULT_DAYS))
    keys = await list_for(services.db, session.installation_id, services.clock.now_ms())
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
    await insert_key(services.db, key, await services.crypto.sha256_hex(secret))
    log.info("installation %s: agent key %s minted", key.installation_id, key.id)
    return key, secret


async def keys_of(services: Services, session: Session) -> list[AgentKey]:
    """The keys a page lists: all of the installation's on the manage view, on a content page
    the person's own that reach that content (a key minted on another reaches only that one)."""
    keys = await list_for(services.db, session.installation_id, services.clock.now_ms())
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
    await revoke(services.db, session.installation_id, key_id, now)
    log.info("installation %s: agent key %s revoked", session.installation_id, key_id)


async def key_for(services: Services, secret: str | None) -> AgentKey | None:
    """The live key a request carries, or None (malformed, unknown, expired, revoked, or its
    installation uninstalled): the caller answers 401 for all alike."""
    if secret is None or not has_shape("agent_key", secret):
        return None
    digest = await services.crypto.sha256_hex(secret)
    return await find_live_key(services.db, digest, services.clock.now_ms())


async def page_agents(
    services: Services, session: Session
) -> tuple[list[Proposal], list[AgentKey]]:
    """What a page shows of the agents: the proposals waiting for a person (its content's, or
    on the manage view all of them) and the agent keys."""
    content = None if session.context_kind == "manage" else _page_content(session)
    now = services.clock.now_ms()
    waiting = await pending(services.db, session.installation_id, content, now)
    return waiting, await keys_of(services, session)


# -- proposals -------------------------------------------------------------------------------------

KINDS = ("publish", "unpublish")
MAX_NOTE_CHARS = 500
MAX_PENDING = 100  # an installation's pending proposals at once
# What agents may make in a day, withdrawn and decided proposals counted: through one person's
# keys, and through all of an installation's. Each is a row and an event for every endpoint.
MADE_A_DAY_BY_PERSON, MADE_A_DAY = 100, 300


class TimeRefused(Refusal):
    """The proposed time is not one the form would take: the form's code, words and ways out."""

    def __init__(self, refused: TimeRefusal) -> None:
        super().__init__(422, refused.code, refused.message)
        self.retries: tuple[Retry, ...] = refused.retries


@dataclass(frozen=True)
class Proposed:
    """What an agent's proposal asks for: a change of a content at a wall time (named as
    `propose_schedule`'s arguments)."""

    content_id: str
    change: str
    to: str | None
    local_time: str
    timezone: str
    fold: str | None
    note: str
    release: str | None = None  # a waiting release to add the change to (its time is used)
    changes: str | None = None  # a waiting schedule to move (to this time) or send now
    changes_as: str | None = None  # moved | sent_now


def _change(key: AgentKey, asked: Proposed) -> str | None:
    """The `to` of the change, when the key's person may make it (None: whichever of that kind
    the confirming person's page offers); refused when they may not."""
    if not is_id(asked.content_id):
        raise Refusal(422, "invalid_content_id", "A content id is 1 to 64 letters, digits, - or _.")
    if not key.reaches(asked.content_id):
        raise Refusal.explained(403, "other_content")
    if asked.change not in KINDS:
        raise Refusal(422, "invalid_kind", "Propose a publish or an unpublish.")
    if key.offered is None:
        return asked.to
    offered = sorted(to for kind, to in key.offered if kind == asked.change)
    if asked.to is not None and asked.to not in offered:
        offered = []
    if not offered:
        raise Refusal(
            403,
            "transition_not_allowed",
            f"{key.person_name} may not make this change to this content, so their key may not"
            " propose it.",
        )
    return asked.to or offered[0]


async def propose(services: Services, key: AgentKey, asked: Proposed) -> Proposal:
    to_state = _change(key, asked)
    note = asked.note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise Refusal(422, "note_too_long", f"A note is at most {MAX_NOTE_CHARS} characters.")
    now = services.clock.now_ms()
    resolved = await _release_time(services, key, asked.release, now) or _time_of(asked, now)
    await _room_for_one_more(services, key, now)
    proposal = Proposal(
        id="prp_" + services.crypto.random_token()[:22],
        installation_id=key.installation_id,
        key_id=key.id,
        key_name=key.name,
        person_name=key.person_name,
        content_id=asked.content_id,
        kind=asked.change,
        to_state=to_state,
        local_time=resolved.local_time,
        timezone=resolved.timezone,
        fold=resolved.fold,
        due_at=resolved.due_at_ms,
        note=note,
        status=agents.PENDING,
        schedule_id=None,
        decided_by_name=None,
        created_at=now,
        release_id=asked.release,
        changes=asked.changes,
        changes_as=asked.changes_as,
    )
    event = ProposalEvent(
        at=now,
        installation_id=key.installation_id,
        proposal_id=proposal.id,
        content_id=proposal.content_id,
        kind=proposal.kind,
        to_state=to_state,
        due_at=proposal.due_at,
        local_time=proposal.local_time,
        timezone=proposal.timezone,
        proposed_by=key.name,
        for_person=key.person_name,
    )
    await agents.insert_proposal(services.db, proposal, event.body(services.config.public_origin))
    # Never the note: it is the agent's text, for the person's page only.
    log.info(
        "installation %s: proposal %s made by agent key %s",
        key.installation_id,
        proposal.id,
        key.id,
    )
    return proposal


async def _release_time(
    services: Services, key: AgentKey, release_id: str | None, now: int
) -> ResolvedTime | None:
    """The time of the waiting release a proposal adds its change to (None: it joins none)."""
    if release_id is None:
        return None
    found = (
        await releases.get(services.db, key.installation_id, release_id)
        if is_id(release_id)
        else None
    )
    if found is None or found.status != ReleaseStatus.WAITING or found.due_at <= now:
        raise Refusal.explained(409, "release_closed")
    fold: Fold | None = "earlier" if found.fold == "earlier" else "later" if found.fold else None
    return ResolvedTime(found.due_at, found.local_time, found.timezone, fold)


def _time_of(asked: Proposed, now: int) -> ResolvedTime:
    """The proposed wall time resolved by the form's rules, or refused with the form's words."""
    resolved = resolve_local_time(
        asked.local_time.strip(),
        asked.timezone.strip(),
        asked.fold or None,
        now=datetime.fromtimestamp(now / 1000, UTC),
    )
    if isinstance(resolved, TimeRefusal):
        raise TimeRefused(resolved)
    return resolved


async def _room_for_one_more(services: Services, key: AgentKey, now: int) -> None:
    """Refused past `MAX_PENDING` proposals waiting, or what agents may make in a day."""
    waiting, since, since_by_person = await agents.made(
        services.db, key.installation_id, key.person_id, now, now - DAY_MS
    )
    if waiting >= MAX_PENDING:
        raise Refusal(
            409,
            "too_many_proposals",
            f"This installation has {MAX_PENDING} proposals waiting for a person already.",
        )
    if since_by_person >= MADE_A_DAY_BY_PERSON:
        whose, most = f"The agent keys of {key.person_name}", MADE_A_DAY_BY_PERSON
    elif since >= MADE_A_DAY:
        whose, most = "This installation's agents", MADE_A_DAY
    else:
        return
    raise Refusal(
        429,
        "too_many_proposals",
        f"{whose} have made {most} proposals in the last 24 hours, the most they may"
        " (withdrawn and decided ones count). Try again later.",
    )


async def withdraw(services: Services, key: AgentKey, proposal_id: str) -> Proposal:
    """The agent takes back one of its own pending proposals."""
    found = await _found(services, key.installation_id, proposal_id, key.id)
    await _end(services, found, agents.WITHDRAWN, key_id=key.id)
    return await _found(services, key.installation_id, proposal_id)


async def decline(services: Services, session: Session, proposal_id: str) -> Proposal:
    """A person who could make the change ends it (on the manage view: a site admin)."""
    found = await _for_page(services, session, proposal_id)
    if not session.rights.may_decide(found.kind):
        raise Refusal(
            403,
            "decline_not_allowed",
            "You may not make this change to this content, so you may not decline it either.",
        )
    await _end(services, found, agents.DECLINED, by_name=session.person_name)
    log.info("installation %s: proposal %s declined", session.installation_id, proposal_id)
    return found


async def confirm(
    services: Services, session: Session, proposal_id: str, version_id: str, published: str
) -> Created:
    """The ordinary create, for the proposal's change and time, with the person's session and
    pinned to what their page showed; the proposal names the schedule it made."""
    found = await _for_page(services, session, proposal_id)
    now = services.clock.now_ms()
    if found.status_at(now) != agents.PENDING:
        raise _not_pending(found, now)
    offered = sorted(to for kind, to in session.offered or () if kind == found.kind)
    to_state = found.to_state or (offered[0] if offered else "")
    created = await create_schedule(
        services,
        session,
        ScheduleForm(
            version_id=version_id,
            published_version_id=published,
            transition=f"{found.kind}:{to_state}",
            local_time=found.local_time,
            timezone=found.timezone,
            fold=found.fold or "",
            proposed_by=f"the proposal of {found.key_name} (an agent key of {found.person_name})",
            release=found.release_id or "",
            move_of=found.changes if found.changes_as == "moved" else None,
            send_now_of=found.changes if found.changes_as == "sent_now" else None,
        ),
    )
    decided = await agents.decide(
        services.db,
        session.installation_id,
        proposal_id,
        agents.CONFIRMED,
        services.clock.now_ms(),
        by_name=session.person_name,
        schedule_id=created.schedule_id,
    )
    if not decided:  # withdrawn or confirmed elsewhere meanwhile: the schedule stands, as made
        log.warning(
            "installation %s: proposal %s ended while confirmed",
            session.installation_id,
            proposal_id,
        )
    log.info(
        "installation %s: proposal %s confirmed as schedule %s",
        session.installation_id,
        proposal_id,
        created.schedule_id,
    )
    return created


def _page_content(session: Session) -> str:
    return session.content_primary_id or session.content_id or ""


async def _for_page(services: Services, session: Session, proposal_id: str) -> Proposal:
    found = await _found(services, session.installation_id, proposal_id)
    if session.context_kind != "manage" and found.content_id != _page_content(session):
        raise Refusal.explained(403, "other_content")
    return found


async def _found(
    services: Services, installation_id: str, proposal_id: str, key_id: str | None = None
) -> Proposal:
    """The proposal (only the key's own, with `key_id`); refused alike otherwise."""
    found = (
        await agents.get(services.db, installation_id, proposal_id) if is_id(proposal_id) else None
    )
    if found is None or key_id not in (None, found.key_id):
        raise Refusal(404, "proposal_not_found", "There is no such proposal in this installation.")
    return found


async def _end(services: Services, found: Proposal, status: str, **by: str) -> None:
    """`found` ended as `status` (`by`: `decide`'s who), unless it was not pending any more."""
    now = services.clock.now_ms()
    if not await agents.decide(services.db, found.installation_id, found.id, status, now, **by):
        raise _not_pending(found, now)


def _not_pending(found: Proposal, now: int) -> Refusal:
    status = found.status_at(now)
    return Refusal(
        409,
        "proposal_ended",
        f"This proposal was {status} already: nothing was changed."
        if status != agents.EXPIRED
        else "This proposal's time has passed: nothing was changed.",
    )
