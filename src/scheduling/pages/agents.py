"""The agents' part of the content page and the manage view: proposals waiting for a person,
the agent keys and the form that mints one, and the page that shows a new key once; keys
minted and revoked, proposals confirmed or declined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.access import open_access, read_launched_content
from scheduling.actions.agents import confirm, decline, mint_key, page_agents, revoke_key
from scheduling.domain.outcomes import WAITING
from scheduling.domain.schedules import Schedule, ShownVersions, before_text, offered_by
from scheduling.domain.times import instant_text
from scheduling.domain.wording import KIND
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.pages.content import to_receipt
from scheduling.repository import schedules
from scheduling.repository.agents import Proposal
from scheduling.repository.installations import AgentKey, Session
from scheduling.services import Services

# -- the templates ---------------------------------------------------------------------------------

AGENTS = """{% extends "base.html" %}
{% macro session_fields(panel) %}
  <input type="hidden" name="csrf_token" value="{{ panel.csrf_token }}">
  <input type="hidden" name="opened_for" value="{{ panel.opened_for }}">
  {% if panel.tab %}<input type="hidden" name="tab" value="{{ panel.tab }}">{% endif %}
{% endmacro %}
{% block main %}
<h1>Agents</h1>
{% if flash %}<div class="notice" role="status" data-done><p>{{ flash }}</p></div>{% endif %}
<section class="agents" aria-labelledby="proposals-heading">
  <h2 id="proposals-heading">Proposed by agents</h2>
  {% if agents.proposals %}
  <ul class="proposals">
    {% for p in agents.proposals %}
    <li data-proposal-id="{{ p.id }}">
      <p><strong>{{ p.key_name }}</strong> proposes: {{ p.change_words }} on {{ p.when }} — for {{ p.person_name }}</p>
      {% if p.note %}<blockquote class="note">{{ p.note }}</blockquote>{% endif %}
      {% if p.replaces %}<p class="warning" data-warning="replace">Confirming replaces the waiting schedule to {{ p.replaces }}.</p>{% endif %}
      {% if p.collides %}<p class="warning" data-warning="collision">{{ p.collides }}</p>{% endif %}
      {% if p.may_decide %}
      <div class="inline">
      {% if agents.pins %}
      <form method="post" action="/installations/{{ agents.installation_id }}/proposals/{{ p.id }}/confirm" class="inline">
        {{ session_fields(agents) }}
        <input type="hidden" name="version_id" value="{{ agents.pins.current }}">
        <input type="hidden" name="published_version_id" value="{{ agents.pins.published or '' }}">
        <button type="submit" data-proposal-action="confirm">Confirm<span class="visually-hidden"> {{ p.change_words|lower }} on {{ p.when }}</span></button>
      </form>
      {% endif %}
      <form method="post" action="/installations/{{ agents.installation_id }}/proposals/{{ p.id }}/decline" class="inline">
        {{ session_fields(agents) }}
        <button type="submit" class="secondary" data-proposal-action="decline">Decline</button>
      </form>
      </div>
      {% if not agents.pins %}<p>To confirm it, open this content from Dee Wan and press Confirm there: Scheduling pins the version you see then.</p>{% endif %}
      {% else %}
      <p>Dee Wan does not let you make this change, so someone who may confirms or declines it.</p>
      {% endif %}
    </li>
    {% endfor %}
  </ul>
  {% else %}
  <p>No agent proposes anything {{ agents.scope_words }} now.</p>
  {% endif %}

  <h2 id="agent-keys-heading">Agent keys</h2>
  <p>A key lets an agent (an assistant, a release bot) read the schedules {{ agents.scope_words }} and propose new ones; only a person confirms them. It acts for you and can never do more than you may.</p>
  {% if agents.keys %}
  <ul class="agent-keys">
    {% for k in agents.keys %}
    <li data-agent-key-id="{{ k.id }}">{{ k.name }}, for {{ k.person_name }}: until {{ k.expires }}; {{ k.last_use }}{% if k.read_only %}; reads only{% endif %}.
      <form method="post" action="/installations/{{ agents.installation_id }}/agent-keys/{{ k.id }}/revoke" class="inline">
        {{ session_fields(agents) }}
        <button type="submit" class="secondary">Revoke<span class="visually-hidden"> {{ k.name }}</span></button>
      </form>
    </li>
    {% endfor %}
  </ul>
  {% endif %}
  <form method="post" action="/installations/{{ agents.installation_id }}/agent-keys" class="mint-key">
    {{ session_fields(agents) }}
    <label for="agent-key-name">Agent's name</label>
    <input id="agent-key-name" name="name" maxlength="80" required>
    <label for="agent-key-days">Lasts</label>
    <select id="agent-key-days" name="days">
      {% for d in agents.day_choices %}<option value="{{ d }}"{% if d == 7 %} selected{% endif %}>{{ d }} day{{ 's' if d != 1 }}</option>{% endfor %}
    </select>
    <button type="submit">Create a key</button>
  </form>
</section>
{% endblock %}
"""

AGENT_KEY = """{% extends "base.html" %}
{% block main %}
<h1>{{ title }}</h1>
<p role="status">This is the key for <strong>{{ key_name }}</strong>, until {{ expires }}. It is shown this once: copy it now. Scheduling keeps only a fingerprint of it.</p>
<p><label for="agent-key">Agent key</label><br><input id="agent-key" readonly value="{{ secret }}" size="50" data-agent-key></p>
<p>Give the agent's MCP client this address and header:</p>
<pre><code>{{ snippet }}</code></pre>
<p><a href="{{ back_href }}">Back to the agents page</a></p>
{% endblock %}
"""


# -- the model and the routes ----------------------------------------------------------------------

DAY_CHOICES = (1, 3, 7, 14, 30)


@dataclass(frozen=True)
class ProposalItem:
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
        # As the form warns before Schedule is pressed, so does Confirm.
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
    proposals, keys = await page_agents(services, session)
    panel = agents_panel(session, proposals, keys, pins=pins, live=live)
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


async def mint(request: Request, services: Services) -> Response:
    """A new key, shown on its own page this once (its hash alone is kept)."""
    session = await require_form_post(request, services)
    fields = request.form()
    key, secret = await mint_key(services, session, fields.get("name", ""), fields.get("days", ""))
    server = {
        "type": "http",
        "url": f"{services.config.public_origin}/mcp",
        "headers": {"Authorization": f"Bearer {secret}"},
    }
    model = AgentKeyPage(
        title="Your new agent key",
        person_name=session.person_name,
        installation_id=session.installation_id,
        key_name=key.name,
        expires=instant_text(key.expires_at, "UTC"),
        secret=secret,
        snippet=json.dumps({"mcpServers": {"scheduling": server}}, indent=2),
        back_href=session.href("/agents"),
    )
    return page(model, 201)


async def revoke(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await revoke_key(services, session, request.path_params["key_id"])
    return redirect(session.href("/agents", [("revoked", "1")]))


async def confirm_proposal(request: Request, services: Services) -> Response:
    """The ordinary create, pinned to what the page showed; refused as a form would be
    (`content.confirm_again`)."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await confirm(services, session, request.path_params["proposal_id"], *shown)
    return to_receipt(session, created)


async def decline_proposal(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await decline(services, session, request.path_params["proposal_id"])
    return redirect(session.href("/agents", [("declined", "1")]))
