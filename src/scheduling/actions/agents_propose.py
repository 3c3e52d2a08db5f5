"""Agents propose, people decide: a proposal made with an agent key, withdrawn by its agent,
and confirmed or declined by a person on their page.

A proposal pins nothing and publishes nothing. Its time is resolved by the form's rules (a
gap, a fold, an unknown zone or a past time is refused with the form's suggestions). Confirm
is the ordinary create, with the confirming person's session: the content read with their
delegation, pinned to what their page showed, refused as a form would be.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from scheduling.actions.create import Created, ScheduleForm, create_schedule
from scheduling.domain.localtime import Fold, ResolvedTime, Retry, TimeRefusal, resolve_local_time
from scheduling.domain.notification_events import ProposalEvent
from scheduling.domain.refusals import Refusal
from scheduling.domain.release import ReleaseStatus
from scheduling.domain.secret_shapes import is_id
from scheduling.repository import proposals, releases
from scheduling.repository.agent_keys import AgentKey
from scheduling.repository.proposals import Proposal
from scheduling.repository.sessions import Session
from scheduling.services import Services, log

KINDS = ("publish", "unpublish")
MAX_NOTE_CHARS = 500
MAX_PENDING = 100  # an installation's pending proposals at once
# What agents may make in a day, withdrawn and decided proposals counted: through one person's
# keys, and through all of an installation's. Each is a row and an event for every endpoint.
MADE_A_DAY_BY_PERSON, MADE_A_DAY = 100, 300
DAY_MS = 24 * 60 * 60 * 1000


class TimeRefused(Refusal):
    """The proposed time is not one the form would take: the form's code, words and ways out."""

    def __init__(self, refused: TimeRefusal) -> None:
        super().__init__(422, refused.code, refused.message)
        self.retries: tuple[Retry, ...] = refused.retries


@dataclass(frozen=True)
class Proposed:
    """What an agent's proposal asks for: a change of a content at a wall time."""

    installation_id: str
    content_id: str
    kind: str
    to_state: str | None
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
    if asked.kind not in KINDS:
        raise Refusal(422, "invalid_kind", "Propose a publish or an unpublish.")
    if key.offered is None:
        return asked.to_state
    offered = sorted(to for kind, to in key.offered if kind == asked.kind)
    if asked.to_state is not None and asked.to_state not in offered:
        offered = []
    if not offered:
        raise Refusal(
            403,
            "transition_not_allowed",
            f"{key.person_name} may not make this change to this content, so their key may not"
            " propose it.",
        )
    return asked.to_state or offered[0]


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
        kind=asked.kind,
        to_state=to_state,
        local_time=resolved.local_time,
        timezone=resolved.timezone,
        fold=resolved.fold,
        due_at=resolved.due_at_ms,
        note=note,
        status=proposals.PENDING,
        schedule_id=None,
        decided_by_name=None,
        created_at=now,
        release_id=asked.release,
        changes=asked.changes,
        changes_as=asked.changes_as,
    )
    event = _made(proposal)
    await proposals.insert(services.db, proposal, event.body(services.config.public_origin))
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
    made = await proposals.made(services.db, key.installation_id, key.person_id, now, now - DAY_MS)
    if made.pending >= MAX_PENDING:
        raise Refusal(
            409,
            "too_many_proposals",
            f"This installation has {MAX_PENDING} proposals waiting for a person already.",
        )
    if made.since_by_person >= MADE_A_DAY_BY_PERSON:
        whose, most = f"The agent keys of {key.person_name}", MADE_A_DAY_BY_PERSON
    elif made.since >= MADE_A_DAY:
        whose, most = "This installation's agents", MADE_A_DAY
    else:
        return
    raise Refusal(
        429,
        "too_many_proposals",
        f"{whose} have made {most} proposals in the last 24 hours, the most they may"
        " (withdrawn and decided ones count). Try again later.",
    )


def _made(proposal: Proposal) -> ProposalEvent:
    """The event a new proposal raises for the installation's channels."""
    return ProposalEvent(
        at=proposal.created_at,
        installation_id=proposal.installation_id,
        proposal_id=proposal.id,
        content_id=proposal.content_id,
        kind=proposal.kind,
        to_state=proposal.to_state,
        due_at=proposal.due_at,
        local_time=proposal.local_time,
        timezone=proposal.timezone,
        proposed_by=proposal.key_name,
        for_person=proposal.person_name,
    )


async def withdraw(services: Services, key: AgentKey, proposal_id: str) -> Proposal:
    """The agent takes back one of its own pending proposals."""
    found = await _found(services, key.installation_id, proposal_id)
    if found.key_id != key.id:
        raise _not_found()
    now = services.clock.now_ms()
    ended = await proposals.decide(
        services.db, key.installation_id, proposal_id, proposals.WITHDRAWN, now, key_id=key.id
    )
    if not ended:
        raise _not_pending(found, now)
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
    now = services.clock.now_ms()
    ended = await proposals.decide(
        services.db,
        session.installation_id,
        proposal_id,
        proposals.DECLINED,
        now,
        by_name=session.person_name,
    )
    if not ended:
        raise _not_pending(found, now)
    log.info("installation %s: proposal %s declined", session.installation_id, proposal_id)
    return found


async def confirm(
    services: Services, session: Session, proposal_id: str, version_id: str, published: str
) -> Created:
    """The ordinary create, for the proposal's change and time, with the person's session and
    pinned to what their page showed; the proposal names the schedule it made."""
    found = await _for_page(services, session, proposal_id)
    now = services.clock.now_ms()
    if found.status_at(now) != proposals.PENDING:
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
    decided = await proposals.decide(
        services.db,
        session.installation_id,
        proposal_id,
        proposals.CONFIRMED,
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


async def _found(services: Services, installation_id: str, proposal_id: str) -> Proposal:
    found = (
        await proposals.get(services.db, installation_id, proposal_id)
        if is_id(proposal_id)
        else None
    )
    if found is None:
        raise _not_found()
    return found


def _not_found() -> Refusal:
    return Refusal(404, "proposal_not_found", "There is no such proposal in this installation.")


def _not_pending(found: Proposal, now: int) -> Refusal:
    status = found.status_at(now)
    return Refusal(
        409,
        "proposal_ended",
        f"This proposal was {status} already: nothing was changed."
        if status != proposals.EXPIRED
        else "This proposal's time has passed: nothing was changed.",
    )
