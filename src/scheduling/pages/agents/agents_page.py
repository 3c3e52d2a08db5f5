"""The agents' page: proposals waiting for a person (a content launch's: its content's) and the
agent keys, and the page that shows a key once; keys minted and revoked, proposals confirmed
or declined (a confirm refused on its form is the content page's `confirm_again`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.access import open_access, read_launched_content
from scheduling.actions.agent_access import mint_key, page_agents, revoke_key
from scheduling.actions.agents_propose import confirm, decline
from scheduling.domain.collisions import before_text
from scheduling.domain.pins import ShownVersions
from scheduling.domain.rights import offered_by
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import WAITING
from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import KIND
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.content.content_page import to_receipt
from scheduling.repository import schedules
from scheduling.repository.agent_keys import AgentKey
from scheduling.repository.proposals import Proposal
from scheduling.repository.sessions import Session
from scheduling.services import Services

DAY_CHOICES = (1, 3, 7, 14, 30)


@dataclass(frozen=True)
class ProposalItem:
    """One agent's proposal waiting for a person, as the page lists it."""

    id: str
    key_name: str
    person_name: str
    change_words: str  # "Publish" or "Unpublish (to archived)"
    when: str
    note: str
    replaces: str | None  # the waiting schedule a confirm would replace, in words
    collides: str | None  # the other kind's waiting schedule it would collide with
    may_decide: bool  # the page's person could make the change (a viewer cannot)


@dataclass(frozen=True)
class KeyItem:
    """One agent key, as the page lists it."""

    id: str
    name: str
    person_name: str
    expires: str
    last_use: str
    read_only: bool


@dataclass(frozen=True)
class AgentsPanel:
    """The agents' part of a page: the proposals, the keys and the form to mint one."""

    installation_id: str
    csrf_token: str
    opened_for: str
    tab: str | None
    pins: ShownVersions | None  # a content launch's: what Confirm pins; None for a manage one
    scope_words: str
    proposals: tuple[ProposalItem, ...]
    keys: tuple[KeyItem, ...]
    day_choices: tuple[int, ...] = DAY_CHOICES


def agents_panel(
    session: Session,
    proposals: list[Proposal],
    keys: list[AgentKey],
    now_ms: int,
    *,
    pins: ShownVersions | None,
    live: tuple[Schedule, ...] = (),
) -> AgentsPanel:
    waiting = {s.kind: s for s in live if s.status in WAITING}

    def replaces(proposal: Proposal) -> str | None:
        old = waiting.get(proposal.kind)
        if old is None:
            return None
        return f"{KIND[old.kind].lower()} on {instant_text(old.due_at, old.timezone)}"

    def collides(proposal: Proposal) -> str | None:
        # As the form warns before Schedule is pressed (issue 38), so does Confirm.
        other = [s for k, s in waiting.items() if k != proposal.kind and s.made_stale_by is None]
        return before_text(other[0]) if other else None

    return AgentsPanel(
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        tab=session.tab,
        pins=pins,
        scope_words="for this content" if session.context_kind == "content" else "here",
        proposals=tuple(
            ProposalItem(
                id=p.id,
                key_name=p.key_name,
                person_name=p.person_name,
                change_words=_change_words(p.kind, p.to_state),
                when=instant_text(p.due_at, p.timezone),
                note=p.note,
                replaces=replaces(p),
                collides=collides(p),
                may_decide=session.rights.may_decide(p.kind),
            )
            for p in proposals
        ),
        keys=tuple(
            KeyItem(
                id=k.id,
                name=k.name,
                person_name=k.person_name,
                expires=instant_text(k.expires_at, "UTC"),
                last_use="never used"
                if k.last_used_at is None
                else f"last used {instant_text(k.last_used_at, 'UTC')}",
                read_only=k.offered is not None and not k.offered,
            )
            for k in keys
        ),
    )


def _change_words(kind: str, to_state: str | None) -> str:
    """`Publish`, `Unpublish`; the state it ends in only where the change's name does not
    say it (`Unpublish (to archived)`)."""
    said = {"publish": "published", "unpublish": "draft"}.get(kind)
    return KIND[kind] + (f" (to {to_state})" if to_state and to_state != said else "")


@dataclass(frozen=True)
class AgentsPage:
    """`GET …/agents`: the proposals waiting for a person and the agent keys."""

    template: ClassVar[str] = "agents.html"

    title: str
    person_name: str
    installation_id: str
    agents: AgentsPanel
    flash: str | None  # what was just done here
    rooms: tuple[Room, ...]
    dee_wan_href: str


_DONE = {"revoked": "The agent key was revoked.", "declined": "The proposal was declined."}


async def agents_room(request: Request, services: Services) -> Response:
    """A content launch's Confirm pins what Dee Wan reports now, read here as its page does."""
    session = await require_session(request, services)
    access = await open_access(services, session)
    live: tuple[Schedule, ...]
    pins, live = None, ()
    if session.context_kind == "content":
        read = await read_launched_content(services, access)
        pins = ShownVersions(read.content.current_version_id, read.content.published_version_id)
        primary = read.content.primary_id
        # Who may confirm, by what Dee Wan offers now (as kept with the session by the read).
        session = replace(session, content_primary_id=primary, offered=offered_by(read))
        live = (await schedules.list_for(services.db, session.installation_id, primary, 1)).live
    found = await page_agents(services, session)
    panel = agents_panel(session, found.proposals, found.keys, found.now_ms, pins=pins, live=live)
    done = next((said for name, said in _DONE.items() if name in request.query), None)
    model = AgentsPage(
        "Agents", session.person_name, session.installation_id, panel, done,
        rooms(session, "agents"), access.installation.base_url,
    )  # fmt: skip
    return page(model)


@dataclass(frozen=True)
class AgentKeyPage:
    """The page showing a just-minted agent key's secret, once."""

    template: ClassVar[str] = "agent_key.html"

    title: str
    person_name: str
    installation_id: str
    key_name: str
    expires: str
    secret: str
    snippet: str
    back_href: str


def agent_key_page(
    session: Session, name: str, expires_at: int, secret: str, public_origin: str
) -> AgentKeyPage:
    config = {
        "mcpServers": {
            "scheduling": {
                "type": "http",
                "url": f"{public_origin}/mcp",
                "headers": {"Authorization": f"Bearer {secret}"},
            }
        }
    }
    return AgentKeyPage(
        title="Your new agent key",
        person_name=session.person_name,
        installation_id=session.installation_id,
        key_name=name,
        expires=instant_text(expires_at, "UTC"),
        secret=secret,
        snippet=json.dumps(config, indent=2),
        back_href=session.href("/agents"),
    )


async def mint(request: Request, services: Services) -> Response:
    """A new key, shown on its own page this once (its hash alone is kept)."""
    session = await require_form_post(request, services)
    fields = request.form()
    minted = await mint_key(services, session, fields.get("name", ""), fields.get("days", ""))
    origin = services.config.public_origin
    model = agent_key_page(session, minted.key.name, minted.key.expires_at, minted.secret, origin)
    return page(model, 201)


async def revoke(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await revoke_key(services, session, request.path_params["key_id"])
    return redirect(session.href("/agents", [("revoked", "1")]))


async def confirm_proposal(request: Request, services: Services) -> Response:
    """The ordinary create, pinned to what the page showed; refused as a form would be
    (`content_page.confirm_again`)."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await confirm(services, session, request.path_params["proposal_id"], *shown)
    return to_receipt(session, created)


async def decline_proposal(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await decline(services, session, request.path_params["proposal_id"])
    return redirect(session.href("/agents", [("declined", "1")]))
