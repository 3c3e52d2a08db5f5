"""A release's page (its items in send order, checked against Dee Wan with the person's
delegation each time it opens) and its forms, and the installation's releases room.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.access import open_access
from scheduling.actions.listing import Listed, listed
from scheduling.actions.releases import (
    Checked,
    Untouched,
    cancel_release,
    check_release,
    move_release,
    release_of,
    rename_release,
    reorder_item,
    resume_release,
)
from scheduling.actions.schedules import ScheduleForm
from scheduling.actions.schedules import create_schedule as create
from scheduling.domain.outcomes import LIVE, Status
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import (
    RELEASE_HELD,
    Release,
    ReleaseLine,
    Schedule,
    ShownVersions,
    held_text,
    pin_of,
)
from scheduling.domain.times import instant_text, rfc3339
from scheduling.domain.wording import Refusal, change_text, counted, explain
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    ScheduleCard,
    card_page,
    cards,
    pager,
)
from scheduling.http.requests import Request, page_number
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.pages.content import to_receipt
from scheduling.repository import releases
from scheduling.repository.installations import Session
from scheduling.services import Services

# -- the template ----------------------------------------------------------------------------------

RELEASE = """{% extends "base.html" %}
{% from "cards.html" import schedule_card, form_fields %}
{% from "pager.html" import page_info, page_links %}
{% block main %}
<section class="release" data-release-id="{{ release_id }}" data-release-status="{{ status }}">
<h1>Release “{{ release_name }}”</h1>
{% if error %}<div class="problem" role="alert" data-error-code="{{ error_code }}"><p>{{ error }}</p></div>{% endif %}
{% if notice %}<div class="notice" role="status" data-notice><p>{{ notice }}</p>{% for u in untouched %}{% if loop.first %}<ul>{% endif %}<li data-untouched="{{ u.schedule_id }}"><code>{{ u.schedule_id }}</code>: {{ u.why }}</li>{% if loop.last %}</ul>{% endif %}{% endfor %}</div>{% endif %}
<dl class="facts">
  <dt>When</dt><dd><time datetime="{{ when_iso }}">{{ when_label }}</time></dd>
  <dt>Status</dt><dd><span class="status status-{{ status }}">{{ status_label }}</span></dd>
  <dt>Made by</dt><dd>{{ created_by_name }}</dd>
  <dt>Checked</dt><dd data-checked>{{ checked_label }}</dd>
</dl>
<p class="hint">Its items are sent one at a time, in this order, at its time. Dee Wan applies each change on its own: when an item is not done, the items after it are held (never sent) until someone resumes or cancels them, and what was applied before it stays applied. Scheduling cannot undo a change Dee Wan applied.</p>
{% if held %}<div class="warning" data-held-by="{{ held_by }}"><p><strong>Held.</strong> {{ held }}</p></div>{% endif %}
{% if resume %}
<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/resume" class="resume">
  {{ form_fields(card_page) }}
  <fieldset>
    <legend>Resume from <code>{{ held_by }}</code>, now</legend>
    <label><input type="radio" name="how" value="as_is" checked> Send it again as it is, pinned to <code>{{ resume.version }}</code></label>
    {% if resume.repin_version %}<label><input type="radio" name="how" value="repin"> Pin <code>{{ resume.repin_version }}</code> instead (what Dee Wan reports now), then send it</label>
    <input type="hidden" name="version_id" value="{{ resume.current }}"><input type="hidden" name="published_version_id" value="{{ resume.published or '' }}">{% endif %}
    <label><input type="radio" name="how" value="remove"> Take it out of the release, and send the rest</label>
  </fieldset>
  <button type="submit">Resume</button>
</form>
{% endif %}
{% if items %}
{{ page_info(pager) }}
<ol class="schedules release-items" aria-label="Items in send order">
{% for s in items %}{{ schedule_card(s, card_page) }}{% endfor %}
</ol>
{{ page_links(pager) }}
{% else %}
<p>No items: add one from a content's page in Dee Wan (Schedule, then this release).</p>
{% endif %}
{% if reorder %}
<h2>Order</h2>
<ol class="reorder">
{% for item in reorder %}
  <li data-order-of="{{ item.id }}"><code>{{ item.id }}</code> ({{ item.change }})
  {% for step, label in item.steps %}<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/{{ step }}" class="inline">{{ form_fields(card_page) }}<input type="hidden" name="schedule_id" value="{{ item.id }}"><button type="submit" class="secondary">{{ label }}<span class="visually-hidden"> {{ item.id }}</span></button></form>{% endfor %}
  </li>
{% endfor %}
</ol>
{% endif %}
{% if open %}
<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/check" class="inline">{{ form_fields(card_page) }}<button type="submit" class="secondary">Check now</button></form>
<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/rename">
  {{ form_fields(card_page) }}
  <label for="release-name">Name</label>
  <input id="release-name" name="name" maxlength="100" value="{{ kept.name }}">
  <button type="submit" class="secondary">Rename</button>
</form>
{% if status != "held" %}
<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/move">
  {{ form_fields(card_page) }}
  <label for="release-time">New time</label>
  <input id="release-time" type="datetime-local" name="local_time" value="{{ kept.local_time }}">
  <label for="release-zone">Time zone</label>
  <input id="release-zone" name="timezone" value="{{ kept.timezone }}">
  <input type="hidden" name="fold" value="{{ kept.fold }}">
  <button type="submit" class="secondary">Move the release</button>
</form>
{% endif %}
<form method="post" action="/installations/{{ card_page.installation_id }}/releases/{{ release_id }}/cancel">
  {{ form_fields(card_page) }}
  <button type="submit" class="danger">{% if status == "held" %}Cancel the rest{% else %}Cancel the release{% endif %}</button>
  <span class="hint">Nothing is sent to Dee Wan; nothing already applied is undone.</span>
</form>
{% endif %}
<p class="support">For support: release {{ release_id }}.</p>
</section>
{% endblock %}
"""

RELEASES = """{% extends "base.html" %}
{% block main %}
<h1>Releases</h1>
<p>A release is several pinned changes sent one at a time, in order, at one time. Make one, or add to one, from a content's page: open it in Dee Wan, press Schedule, then choose a release.</p>
{% if releases %}
<ul class="releases" aria-label="Releases">
{% for r in releases %}
  <li class="release-line" data-release-id="{{ r.id }}" data-release-status="{{ r.status }}">
    <a href="{{ r.href }}">“{{ r.name }}”</a>: {{ r.items }}, at <time datetime="{{ r.when_iso }}">{{ r.when }}</time>.
    <span class="status status-{{ r.status }}">{{ r.status_label }}</span>
  </li>
{% endfor %}
</ul>
{% else %}
<p class="empty" data-releases-empty>This installation has no releases.</p>
{% endif %}
{% endblock %}
"""


# -- a release's page and its forms ----------------------------------------------------------------

STATUS_WORDS = {
    "waiting": "Waiting for its time",
    "conflict": "Waiting, with an item Dee Wan would refuse: pin it again or take it out",
    "running": "Being sent, one item at a time",
    "held": "Held: an item was not done, and the rest is not sent",
    "completed": "Done: every item applied",
    "cancelled": "Cancelled",
}
# What the release's verbs refuse of what a form asked (and every 422: a time, a name): the
# page says it beside its forms. Anything else (a session, a CSRF token) is an error page.
ON_THE_PAGE = (
    "release_items_not_allowed", "not_reorderable", "release_closed", "not_resumable",
    "nothing_to_resume", "execution_in_progress", "content_changed",
)  # fmt: skip
NOTICES = {
    "checked": "Checked against Dee Wan now.",
    "renamed": "Renamed.",
    "moved": "Moved: every waiting item is due at the new time.",
    "resumed": "Resumed: the rest is sent now, in order.",
    "reordered": "The order changed.",
}


@dataclass(frozen=True)
class Resume:
    version: str  # the held item's pin
    repin_version: str | None  # what Dee Wan reports now, when it differs and may be pinned
    current: str = ""  # the versions the page showed, which the re-pin checks
    published: str | None = None


@dataclass(frozen=True)
class Order:
    id: str
    change: str
    steps: tuple[tuple[str, str], ...]  # (action, label): up, down


@dataclass(frozen=True)
class ReleasePage:
    template: ClassVar[str] = "release.html"

    title: str
    person_name: str
    release_id: str
    release_name: str
    status: str
    status_label: str
    when_label: str
    when_iso: str
    created_by_name: str
    checked_label: str
    held: str | None
    held_by: str | None
    resume: Resume | None
    items: tuple[ScheduleCard, ...]
    card_page: CardPage
    pager: Pager
    reorder: tuple[Order, ...]
    open: bool  # waiting or held: its forms are offered
    kept: Mapping[str, str]
    notice: str | None = None
    untouched: tuple[Untouched, ...] = ()
    error: str | None = None
    error_code: str | None = None


async def _model(
    services: Services,
    session: Session,
    release: Release,
    checked: Checked | None,
    number: int = 1,
) -> ReleasePage:
    now = services.clock.now_ms()
    items = await releases.items(services.db, release.installation_id, release.id, number)
    reads = checked.reads if checked is not None else {}
    rows, pins = _repinnable(listed(items.schedules, session.rights, reads), session, reads)
    shown = cards(rows, Moment(now, services.config.max_lateness_ms))
    status = release.shown(now)
    held = next((s for s in items.schedules if s.id == release.held_by), None)
    base = f"/installations/{release.installation_id}/releases/{release.id}"
    live = [s for s in items.schedules if s.status in LIVE]
    ordering = status == "waiting" and release.due_at > now and len(live) > 1
    return ReleasePage(
        title=f"Release {release.name}",
        person_name=session.person_name,
        release_id=release.id,
        release_name=release.name,
        status=status,
        status_label=STATUS_WORDS[status],
        when_label=instant_text(release.due_at, release.timezone),
        when_iso=rfc3339(release.due_at),
        created_by_name=release.created_by_name,
        checked_label=_checked(release, checked),
        held=_held(release, items.schedules),
        held_by=release.held_by,
        resume=_resume(held, reads.get(held.content_id) if held else None),
        items=shown,
        card_page=replace(card_page(session, pins=pins), context_kind="release"),
        pager=pager(
            lambda n: f"{base}?page={n}" if n > 1 else base,
            number,
            items.total,
            len(items.schedules),
            items.has_next,
        ),
        reorder=tuple(_order(s.id, s.kind, s.version_id, n, len(live)) for n, s in enumerate(live))
        if ordering
        else (),
        open=release.status in ("waiting", "held"),
        kept={
            "name": release.name,
            "local_time": release.local_time,
            "timezone": release.timezone,
            "fold": release.fold or "",
        },
    )


def _repinnable(
    rows: Sequence[Listed], session: Session, reads: Mapping[str, ContentRead | None]
) -> tuple[tuple[Listed, ...], ShownVersions | None]:
    """An item is pinned again from its launch's own content, with the versions the check
    read of it (which the re-pin checks); another content's, from that content's page."""
    own = reads.get(session.content_primary_id or "")
    if own is None:
        return tuple(replace(r, repin_version=None) for r in rows), None
    pins = ShownVersions(own.content.current_version_id, own.content.published_version_id)
    mine = own.content.primary_id
    return tuple(
        r if r.schedule.content_id == mine else replace(r, repin_version=None) for r in rows
    ), pins


def _checked(release: Release, checked: Checked | None) -> str:
    if release.checked_at is None:
        return "Not checked yet."
    said = f"{instant_text(release.checked_at, release.timezone)}, by {release.checked_by_name}"
    if checked is not None and checked.not_checked:
        said += f"; {checked.not_checked} items not checked this time (check again)"
    if checked is not None and checked.unread:
        said += f"; {checked.unread} items Dee Wan did not answer for"
    return said + "."


def _held(release: Release, items: Sequence[Schedule]) -> str | None:
    """What the held release says: the item not done, what was applied, what is held."""
    if release.held_by is None or release.held_at is None:
        return None
    done = tuple(s.id for s in items if s.status == Status.COMPLETED)
    rest = tuple(s.id for s in items if s.result_code == RELEASE_HELD)
    line = ReleaseLine(release.id, release.name, release.due_at, release.timezone, done, rest)
    return held_text(line, release.held_by, release.held_code, release.held_at)


def _resume(held: Schedule | None, read: ContentRead | None) -> Resume | None:
    """The held item's ways on: as it is, re-pinned to what Dee Wan reports now (when the
    check read it and it differs), or taken out."""
    if held is None:
        return None
    if read is None:
        return Resume(held.version_id, None)
    now = pin_of(held.kind, read.content)
    return Resume(
        held.version_id,
        now if now is not None and now != held.version_id else None,
        read.content.current_version_id,
        read.content.published_version_id,
    )


def _order(schedule_id: str, kind: str, version: str, at: int, count: int) -> Order:
    steps: tuple[tuple[str, str], ...] = (("up", "Up"),) if at > 0 else ()
    steps += (("down", "Down"),) if at < count - 1 else ()
    return Order(schedule_id, change_text(kind, version), steps)


async def release_page(request: Request, services: Services) -> Response:
    """The release, checked against Dee Wan now with the person's delegation."""
    session = await require_session(request, services)
    release = await release_of(services, session, request.path_params["release_id"])
    checked = (
        await check_release(services, session, release)
        if release.status in ("waiting", "held")
        else None
    )
    release = await release_of(services, session, release.id)
    model = await _model(services, session, release, checked, page_number(request.query))
    done = request.query.get("done")
    return page(replace(model, notice=NOTICES.get(done or "")))


async def release_action(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    release_id, action = request.path_params["release_id"], request.path_params["action"]
    fields = request.form()
    if action == "cancel":
        outcome = await cancel_release(services, session, release_id)
        release = await release_of(services, session, release_id)
        model = await _model(services, session, release, None)
        said = f"Cancelled {len(outcome.cancelled)} items; nothing was sent to Dee Wan."
        if outcome.untouched:
            said += f" {len(outcome.untouched)} items were not cancelled:"
        return page(replace(model, notice=said, untouched=tuple(outcome.untouched)))
    await _act(services, session, release_id, action, fields)
    done = "reordered" if action in ("up", "down") else action
    return redirect(f"/installations/{session.installation_id}/releases/{release_id}?done={done}")


async def _act(
    services: Services, session: Session, release_id: str, action: str, fields: Mapping[str, str]
) -> None:
    if action == "check":
        await check_release(services, session, await release_of(services, session, release_id))
    elif action == "rename":
        await rename_release(services, session, release_id, fields.get("name", ""))
    elif action == "move":
        await move_release(
            services,
            session,
            release_id,
            fields.get("local_time", ""),
            fields.get("timezone", ""),
            fields.get("fold", ""),
        )
    elif action == "resume":
        shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
        await resume_release(services, session, release_id, fields.get("how", ""), shown)
    elif action in ("up", "down"):
        step = -1 if action == "up" else 1
        await reorder_item(services, session, release_id, fields.get("schedule_id", ""), step)
    else:
        raise Refusal(404, "not_found", "There is nothing at this address.")


async def again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A form the release's verbs refused: its page again, with what was entered and why
    (any other refusal, a session's or a CSRF token's, is shown as every refusal is)."""
    if refused.code not in ON_THE_PAGE and refused.status != 422:  # 422: a time or a name
        return None
    session = await require_session(request, services)
    release = await release_of(services, session, request.path_params["release_id"])
    model = await _model(services, session, release, None)
    fields = request.form()
    kept = {**model.kept, **{k: v for k, v in fields.items() if k in model.kept}}
    said = refused.message or explain(refused.code)
    return page(replace(model, kept=kept, error=said, error_code=refused.code), refused.status)


async def move_schedule(request: Request, services: Services) -> Response:
    """A waiting schedule's card: moved to a new time (a new row; its pin as the page showed)."""
    session = await require_form_post(request, services)
    asked = replace(ScheduleForm.posted(request.form()), move_of=request.path_params["schedule_id"])
    return to_receipt(session, await create(services, session, asked))


async def send_now(request: Request, services: Services) -> Response:
    """A waiting schedule's card: sent now instead of at its time (a new row, due at once)."""
    session = await require_form_post(request, services)
    fields = request.form()
    asked = ScheduleForm(
        version_id=fields.get("version_id", ""),
        published_version_id=fields.get("published_version_id", ""),
        send_now_of=request.path_params["schedule_id"],
    )
    return to_receipt(session, await create(services, session, asked))


# -- the releases room -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseEntry:
    """One release as the room lists it."""

    id: str
    name: str
    status: str
    status_label: str
    when: str
    when_iso: str
    items: str  # "3 items"
    href: str


@dataclass(frozen=True)
class ReleasesPage:
    template: ClassVar[str] = "releases.html"

    title: str
    person_name: str
    rooms: tuple[Room, ...]
    dee_wan_href: str
    releases: tuple[ReleaseEntry, ...]


async def releases_room(request: Request, services: Services) -> Response:
    session = await require_session(request, services)
    access = await open_access(services, session)
    now = services.clock.now_ms()
    lines = tuple(
        ReleaseEntry(
            r.id, r.name, r.shown(now), STATUS_WORDS[r.shown(now)],
            instant_text(r.due_at, r.timezone), rfc3339(r.due_at), counted(r.items, "item"),
            session.href(f"/releases/{r.id}"),
        )
        for r in await releases.of_installation(services.db, session.installation_id)
    )  # fmt: skip
    model = ReleasesPage(
        "Releases", session.person_name, rooms(session, "releases"),
        access.installation.base_url, lines,
    )  # fmt: skip
    return page(model)
