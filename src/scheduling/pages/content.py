"""The content page of a content launch: the content as Dee Wan reports it now, the form that
schedules a change of it (its time arithmetic done without a script), and its schedules. When
Dee Wan cannot be read the page still shows the schedules as stored, and says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.access import Access, open_access, read_launched_content
from scheduling.actions.listing import Listed, last_page, listed, read_titles
from scheduling.actions.schedules import Created, FormRefusal, ScheduleForm
from scheduling.actions.schedules import create_schedule as create
from scheduling.actions.schedules import retry_schedule as retry
from scheduling.dee_wan import UNAVAILABLE
from scheduling.domain.outcomes import UNTRUSTED, WAITING, Status
from scheduling.domain.protocol import Content, ContentRead
from scheduling.domain.schedules import (
    Conflict,
    Release,
    ReleaseStatus,
    Rights,
    Schedule,
    ShownVersions,
    before_text,
    conflicts,
    offered_by,
    pin_of,
    posted_versions,
)
from scheduling.domain.secrets import is_id
from scheduling.domain.times import (
    FOLDS,
    Retry,
    canonical_zone,
    duration_words,
    instant_text,
    occurrence_labels,
    occurrences,
    offered_zones,
    wall_text,
    years_ahead,
    years_text,
)
from scheduling.domain.wording import Refusal, change_text
from scheduling.http.html.render import (
    SUGGESTION_LEAD_MS,
    Room,
    now_in,
    page,
    rooms,
    suggested_local_time,
)
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    ReleaseRef,
    RetryOffer,
    ScheduleCard,
    card_page,
    cards,
    pager,
    replaces_text,
    schedule_card,
)
from scheduling.http.requests import Request, page_number
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.pages.since_last_visit import News, take_news
from scheduling.repository import releases, schedules
from scheduling.repository.agents import pending
from scheduling.repository.installations import Session
from scheduling.repository.schedules import SchedulePage
from scheduling.services import Services

# -- what the page reads ---------------------------------------------------------------------------

# A translation's page names its group's main item; a slow Dee Wan costs it this long at most.
PRIMARY_TITLE_BUDGET_S = 2.0


# A content read that failed this way leaves the page to the database; any other refusal
# (the installation gone, the person no longer allowed, the content deleted) is Dee Wan's
# answer and is shown as it is.
UNREADABLE = (UNAVAILABLE, UNTRUSTED)


@dataclass(frozen=True)
class ContentView:
    """What the content page shows: the access, Dee Wan's read and a page of schedules."""

    access: Access
    read: ContentRead | None  # None: Dee Wan could not be read now, `unread` says why
    page: SchedulePage
    page_number: int  # the page shown: the last one when the one asked for is past it
    asked_page: int
    schedules: tuple[Listed, ...]
    live: tuple[Schedule, ...]  # what a new schedule of each kind would replace
    made: Schedule | None  # the schedule just created, when this page lists it
    replaced: Schedule | None  # the one `made` replaced
    cancelled: Schedule | None  # the one a cancel just ended, to name it
    primary_title: str | None  # a translation's main item's title, when Dee Wan gave it
    now_ms: int
    unread: Refusal | None = None  # why the content could not be read
    releases: tuple[Release, ...] = ()  # the installation's waiting or held: to join, to name


async def show_content(
    services: Services, session: Session, query: Mapping[str, str]
) -> ContentView:
    """The page `query` asks for (its `page`, `created` and `cancelled`), with Dee Wan's read
    of the content; without it when Dee Wan cannot be read (`unread_view`)."""
    number, cancelled = page_number(query), query.get("cancelled")
    access = await open_access(services, session)
    try:
        read = await read_launched_content(services, access)
    except Refusal as refusal:
        return await unread_view(services, access, refusal, page_number=number, cancelled=cancelled)
    # The page's rights are what this read said, as the session now keeps them.
    rights = access.session.having_read(read.content.primary_id, offered_by(read))
    return await content_view(
        services,
        replace(access, session=rights),
        read,
        page_number=number,
        created=query.get("created"),
        cancelled=cancelled,
    )


async def unread_view(
    services: Services,
    access: Access,
    refusal: Refusal,
    *,
    page_number: int = 1,
    cancelled: str | None = None,
) -> ContentView:
    """The page without Dee Wan's read: the content's schedules from the database, cancels
    judged by what the session kept. Raises `refusal` when it is Dee Wan's own answer, or
    when the session never learnt which content it is about (no page was shown yet)."""
    primary = access.session.content_primary_id
    if refusal.code not in UNREADABLE or primary is None:
        raise refusal
    return await _view(services, access, None, primary, refusal, page_number, None, cancelled)


async def content_view(
    services: Services,
    access: Access,
    read: ContentRead,
    *,
    page_number: int = 1,
    created: str | None = None,
    cancelled: str | None = None,
) -> ContentView:
    """The page for what `read` says now (a create refused on its form shows the same read)."""
    primary = read.content.primary_id
    return await _view(services, access, read, primary, None, page_number, created, cancelled)


async def _view(
    services: Services,
    access: Access,
    read: ContentRead | None,
    primary: str,
    unread: Refusal | None,
    page_number: int,
    created: str | None,
    cancelled: str | None,
) -> ContentView:
    db, installation_id = services.db, access.installation.id
    page = await schedules.list_for(db, installation_id, primary, page_number)
    shown = page_number
    if not page.schedules and page_number > 1 and page.total:
        shown = last_page(page.total)
        page = await schedules.list_for(db, installation_id, primary, shown)
    made = next((s for s in page.schedules if s.id == created), None) if created else None
    if made is not None and made.status not in (Status.PENDING, Status.QUEUED):
        made = None
    ended = None
    if cancelled is not None and is_id(cancelled):
        ended = await schedules.get(db, installation_id, cancelled)
        if ended is None or ended.content_id != primary or ended.status != Status.CANCELLED:
            ended = None
    return ContentView(
        access=access,
        read=read,
        page=page,
        page_number=shown,
        asked_page=page_number,
        schedules=(
            listed(page.schedules, Rights.read(read), {primary: read})
            if read is not None
            else listed(page.schedules, access.session.rights, {})
        ),
        live=page.live,
        made=made,
        replaced=await schedules.replaced_by(db, made) if made is not None else None,
        cancelled=ended,
        primary_title=await _primary_title(services, access, read) if read else None,
        now_ms=services.clock.now_ms(),
        unread=unread,
        releases=tuple(await releases.of_installation(db, installation_id, open_only=True)),
    )


async def _primary_title(services: Services, access: Access, read: ContentRead) -> str | None:
    """A translation's schedules are its group's main item's: name that item by its title."""
    primary = read.content.primary_id
    if primary == read.content.id:
        return None
    titles = await read_titles(services, access, {primary}, budget_s=PRIMARY_TITLE_BUDGET_S)
    return titles.title(primary)


# -- the form --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """One change the form offers."""

    value: str  # "kind:to"
    label: str
    disabled: bool
    replaces: str | None = None  # what choosing it does to the live schedule of its kind
    replaces_id: str | None = None
    collides: str | None = None  # the other kind's waiting schedule it would collide with
    collides_id: str | None = None


@dataclass(frozen=True)
class FormError:
    """Why the form was refused, and the times it offers instead."""

    code: str
    text: str
    field: str
    retries: tuple[Retry, ...]  # one-click ways out: the same form with one field changed
    retry_of: str | None = None  # refused on a Try again of this schedule: offer it again


@dataclass(frozen=True)
class KeptForm:
    """What a create or a Try again posted, kept when Dee Wan could not be read to judge it:
    the page comes back with it, to be sent again once Dee Wan answers."""

    form: ScheduleForm | None  # a create's fields, as entered
    pins: ShownVersions | None  # the versions the posted page showed
    retry_of: str | None = None  # a Try again of this schedule


UNREAD_NOTES = {
    UNAVAILABLE: "Dee Wan is not answering right now",
    UNTRUSTED: (
        "Dee Wan answered about this content in a way its plugin protocol does not allow"
        " (a garbled or unexpected answer)"
    ),
}


def _unread_form(
    view: ContentView, kept: KeptForm | None
) -> tuple[ShownVersions | None, tuple[Choice, ...], ScheduleForm, FormError | None]:
    """Without a read, the only form is the one that was posted: its change as it was
    offered, the rest as entered, and above it why nothing was scheduled."""
    empty = ScheduleForm()
    if kept is None or view.unread is None:
        return None, (), empty, None
    why = UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    form = kept.form or empty
    choice = _posted_choice(form.transition, kept.pins)
    if kept.retry_of:
        then = "press Try again on it in a minute"
    elif choice is not None:
        then = "the form keeps what you entered: press Schedule again in a minute"
    else:
        then = "try again in a minute"
    error = FormError(
        view.unread.code,
        f"{why}, so this could not be checked and nothing was scheduled; {then}.",
        "transition",
        (),
    )
    return kept.pins, (choice,) if choice else (), form, error


def _posted_choice(transition: str, pins: ShownVersions | None) -> Choice | None:
    kind, _, _ = transition.partition(":")
    if pins is None or kind not in ("publish", "unpublish"):
        return None
    version = pins.pin(kind)
    if version is None:
        return None
    return Choice(transition, _label(kind, version), False)


def _label(kind: str, version: str | None) -> str:
    """A change as the form offers it, by the version it pins (None: nothing to pin)."""
    if kind == "publish":
        return f"Publish version {version}"
    return (
        f"Unpublish published version {version}" if version else "Unpublish (nothing is published)"
    )


def _choices(read: ContentRead, live: tuple[Schedule, ...]) -> tuple[Choice, ...]:
    by_kind = {s.kind: s for s in live}
    choices = []
    for t in read.workflow.transitions:
        version = pin_of(t.kind, read.content)
        existing = by_kind.get(t.kind)
        other = next(
            (s for s in live if s.kind != t.kind and s.status in WAITING and not s.needs_repin),
            None,
        )
        choices.append(
            Choice(
                f"{t.kind}:{t.to}",
                _label(t.kind, version),
                version is None,
                replaces=replaces_text(existing) if existing else None,
                replaces_id=existing.id if existing else None,
                collides=before_text(other) if other else None,
                collides_id=other.id if other else None,
            )
        )
    return tuple(choices)


def _entered(form: ScheduleForm, refused: bool) -> str | None:
    """The picker writes dates the browser's way; the hint says the same time the one way."""
    if not form.local_time:
        return None
    said = wall_text(form.local_time)
    if said == form.local_time:
        return None  # not a value the picker sends: nothing to restate
    if refused:
        return f"You entered {said}."
    lead = duration_words(SUGGESTION_LEAD_MS)
    return f"Suggested: {said}, the first whole hour at least {lead} from now."


def _defaults(choices: tuple[Choice, ...], zone: str, now_ms: int) -> ScheduleForm:
    """A fresh form: the first change offered, the first whole hour in `zone` at least
    `SUGGESTION_LEAD_MS` ahead."""
    return ScheduleForm(
        transition=next((c.value for c in choices if not c.disabled), ""),
        local_time=suggested_local_time(zone, now_ms),
        timezone=zone,
        fold="",
    )


@dataclass(frozen=True)
class FormPart:
    """What the page's form shows, and how."""

    pins: ShownVersions | None  # what the page shows, which its forms carry
    choices: tuple[Choice, ...]
    form: ScheduleForm
    error: FormError | None
    zone: str | None  # the form's zone, written the canonical way; None when it is not one
    time_entered: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    releases: tuple[Choice, ...] = ()  # the waiting releases the change may join


def _releases(view: ContentView) -> tuple[Choice, ...]:
    """The installation's releases still waiting for their time (listed by their time)."""
    return tuple(
        Choice(r.id, f"“{r.name}”, at {instant_text(r.due_at, r.timezone)}", False)
        for r in view.releases
        if r.status == ReleaseStatus.WAITING and r.due_at > view.now_ms
    )


def form_part(view: ContentView, refusal: FormRefusal | None, kept: KeptForm | None) -> FormPart:
    """`refusal`: the form comes back with what was entered and what was wrong with it.
    Without Dee Wan's read (`view.unread`), `kept` is what a refused create or Try again
    posted: it comes back with Dee Wan's state said above it."""
    read = view.read
    if read is not None:
        pins: ShownVersions | None = ShownVersions(
            read.content.current_version_id, read.content.published_version_id
        )
        choices = _choices(read, view.live)
        # After a create, offer the zone just used rather than the site's again.
        zone = view.made.timezone if view.made is not None else read.site.timezone
        form = refusal.form if refusal else _defaults(choices, zone, view.now_ms)
        error = (
            FormError(
                refusal.code, refusal.message, refusal.field, refusal.retries, refusal.retry_of
            )
            if refusal
            else None
        )
    else:
        pins, choices, form, error = _unread_form(view, kept)
    # A zone typed in any case is written back the canonical way.
    form_zone = canonical_zone(form.timezone)
    if form_zone is not None:
        form = replace(form, timezone=form_zone)
    both = occurrences(form.local_time, form.timezone)
    fold_choices = tuple(occurrence_labels(*both)) if both else None
    focus_fold = bool(error and error.code == "ambiguous_local_time" and fold_choices)
    entered = _entered(form, error is not None)
    return FormPart(
        pins, choices, form, error, form_zone, entered, fold_choices, focus_fold, _releases(view)
    )


# -- the template ----------------------------------------------------------------------------------

CONTENT = """{% extends "base.html" %}
{% from "cards.html" import schedule_list, form_fields %}
{% from "pager.html" import page_info, page_links %}
{% macro retry_form(r) %}
<form method="post" action="/installations/{{ card_page.installation_id }}/schedules" class="retry">
  {{ form_fields(card_page, pins) }}
  <input type="hidden" name="transition" value="{{ form.transition }}">
  <input type="hidden" name="local_time" value="{{ r.value if r.field == 'local_time' else form.local_time }}">
  <input type="hidden" name="timezone" value="{{ r.value if r.field == 'timezone' else form.timezone }}">
  <input type="hidden" name="fold" value="{{ r.value if r.field == 'fold' else form.fold }}">
  <button type="submit" data-retry-{{ r.field|replace('_', '-') }}="{{ r.value }}">{% if r.field == "local_time" %}Schedule it at {{ r.label }} instead{% elif r.field == "fold" %}Schedule it at {{ r.label }}{% else %}Schedule it in {{ r.label }}{% endif %}</button>
</form>
{% endmacro %}
{% block title %}{% if error %}Not scheduled: {% endif %}{{ title }}{% endblock %}
{% block main %}
{% if content %}
<h1>Schedule “{{ content.title }}”</h1>
<dl class="facts">
  <dt>Model</dt><dd>{{ content.model }}</dd>
  <dt>Locale</dt><dd>{{ content.locale }}</dd>
  <dt>Current version</dt><dd><code>{{ content.current_version_id }}</code></dd>
  <dt>Published version</dt><dd>{% if content.published_version_id %}<code>{{ content.published_version_id }}</code>{% else %}none{% endif %}</dd>
  {% if content.primary_id != content.id %}<dt>Translation of</dt><dd data-primary-id="{{ content.primary_id }}">{% if primary_title is not none %}“{{ primary_title }}”{% else %}the group's main item (Dee Wan did not give its title){% endif %}: schedules apply to the whole translation group</dd>{% endif %}
</dl>
{% else %}
<h1>Schedules of content <code>{{ content_id }}</code></h1>
{% endif %}
{% include "news.html" %}
{% if proposals_href %}<p class="notice" data-proposals-waiting><a href="{{ proposals_href }}">An agent proposes a change to this content</a>: confirm or decline it on the Agents page.</p>{% endif %}
{% if unread %}
<div class="warning" role="status" data-unread="{{ unread.code }}">
  <p>{{ unread.text }}</p>
  <p class="inline"><a class="button secondary" href="{{ unread.retry_href }}">Try again</a> <a href="{{ unread.dee_wan_href }}">Back to Dee Wan</a></p>
  <p class="support">For support: code {{ unread.code }}.</p>
</div>
{% endif %}

{% if flash %}<div class="notice" role="status" data-cancelled="{{ cancelled_id }}"><p>{{ flash }}</p></div>{% endif %}
{% if stale %}<div class="warning" role="status" data-stale-count="{{ stale|length }}"><p>{% if stale|length == 1 %}One waiting schedule pins{% else %}{{ stale|length }} waiting schedules pin{% endif %} what Dee Wan no longer reports, so it would be refused: <a href="#schedule-{{ stale[0].id }}">see {% if stale|length == 1 %}it{% else %}them{% endif %} below</a>.</p></div>{% endif %}
{% if notice %}
{% set made = notice.card %}
<div class="notice" role="status" data-confirmation="{{ made.id }}">
  <p>Scheduled: {{ made.kind_label|lower }} the pinned version <code>{{ made.version_id }}</code> at <time datetime="{{ made.when_iso }}">{{ made.when_label }}</time>.</p>
  {% if notice.replaced %}<p data-replaced="{{ notice.replaced_id }}">It replaces the schedule of version <code>{{ notice.replaced_version }}</code> for {{ notice.replaced }}, which will not be sent; it is kept in the history below.</p>{% endif %}
  {% if made.release %}<p data-release-id="{{ made.release.id }}" data-release-status="{{ made.release.status }}">It is an item of the release “{{ made.release.name }}”, sent at its time after the items before it.</p>{% endif %}
  <p data-deadline="{{ made.deadline_iso }}">If Dee Wan cannot be reached, nothing is sent after <time datetime="{{ made.deadline_iso }}">{{ made.deadline_label }}</time>.</p>
  {% if notice.conflict %}<p data-conflict="{{ notice.conflict.role }}" data-conflict-with="{{ notice.conflict.other_id }}"><strong>Collision:</strong> {% if notice.conflict.role == "stale-after" %}it will be refused unless pinned again: its card below says why, and what to do.{% else %}it puts the other waiting schedule of this content out of date: that one's card below says what to do.{% endif %}</p>{% endif %}
  {% if notice.sent_now %}<p data-sent-now="{{ notice.sent_now }}">Sent now instead of at its time: {% if notice.sent_now == "clock" %}the installation's clock was told, so it leaves within seconds{% else %}the runner's next tick sends it, within a minute{% endif %}.</p>{% endif %}
  {% if notice.years_ahead %}<p data-years-ahead="{{ notice.years_ahead }}"><strong>Note:</strong> that is about {{ notice.years_ahead }} from now. If you meant an earlier year, schedule it again with the right date: the new schedule replaces this one.</p>{% endif %}
  {% if fold_ignored %}<p data-fold-ignored="{{ fold_ignored }}">You chose the {{ fold_ignored }} occurrence, but {{ made.when_short }} happens only once, so that choice was not needed and was ignored.</p>{% endif %}
</div>
{% endif %}

<section aria-labelledby="new-heading">
<h2 id="new-heading">New schedule</h2>
{% if error %}
<div class="problem" role="alert" id="form-error" data-error-code="{{ error.code }}" tabindex="-1"{% if not focus_fold %} autofocus{% endif %}>
  <p><strong>Not scheduled.</strong> {{ error.text }}</p>
  {% if error.retries %}<div class="retries">{% for r in error.retries %}{{ retry_form(r) }}{% endfor %}</div>{% endif %}
  {% if error.retry_of and error.code == "content_changed" %}<div class="retries">
    <form method="post" action="/installations/{{ card_page.installation_id }}/schedules/{{ error.retry_of }}/retry" class="retry">
      {{ form_fields(card_page, pins) }}
      <button type="submit" data-retry-of="{{ error.retry_of }}">Try again with what Dee Wan reports now</button>
    </form>
  </div>{% endif %}
  <p class="support">For support: code {{ error.code }}.</p>
</div>
{% endif %}
{% if choices %}
<form method="post" action="/installations/{{ card_page.installation_id }}/schedules" class="schedule-form" novalidate>
  {{ form_fields(card_page, pins) }}
  <fieldset{% if error and error.field == "transition" %} aria-describedby="form-error"{% endif %}>
    <legend>Change</legend>
    {% for c in choices %}
    <div class="choice">
      <input type="radio" name="transition" id="t-{{ loop.index }}" value="{{ c.value }}"{% if c.value == form.transition %} checked{% endif %}{% if c.disabled %} disabled{% endif %}{% set described = [c.replaces and "t-%d-replaces" % loop.index, c.collides and not c.disabled and "t-%d-collides" % loop.index]|select|join(" ") %}{% if described %} aria-describedby="{{ described }}"{% endif %}>
      <label for="t-{{ loop.index }}">{{ c.label }}</label>
    </div>
    {% if c.replaces %}<p class="hint replaces" id="t-{{ loop.index }}-replaces" data-replaces="{{ c.replaces_id }}" data-for="{{ c.value }}">{{ c.replaces }}</p>{% endif %}
    {% if c.collides and not c.disabled %}<p class="hint collides" id="t-{{ loop.index }}-collides" data-collides-with="{{ c.collides_id }}" data-for="{{ c.value }}"><strong>Collision:</strong> {{ c.collides }}</p>{% endif %}
    {% endfor %}
  </fieldset>
  <div class="field">
    <label for="local_time">Date and time</label>
    <p class="hint" id="local_time-hint">The time on the clock in the time zone below.{% if time_entered %} <span data-time-entered>{{ time_entered }}</span>{% endif %}</p>
    {% if now_label %}<p class="hint now" id="now-hint" data-now-zone="{{ now_zone }}">Now in {{ now_zone }}: {{ now_label }}</p>{% endif %}
    <input type="datetime-local" id="local_time" name="local_time" step="60" required value="{{ form.local_time }}" aria-describedby="local_time-hint{% if now_label %} now-hint{% endif %}{% if error and error.field == 'local_time' %} form-error{% endif %}"{% if error and error.field == "local_time" %} aria-invalid="true"{% endif %}>
  </div>
  <div class="field">
    <label for="timezone">Time zone</label>
    <p class="hint" id="timezone-hint">An IANA name such as Europe/Paris, in any case; type to see suggestions.{% if site_timezone %} The site's zone is {{ site_timezone }}.{% endif %}</p>
    <input type="text" id="timezone" name="timezone" list="zones" required autocomplete="off" spellcheck="false" value="{{ form.timezone }}" aria-describedby="timezone-hint{% if error and error.field == 'timezone' %} form-error{% endif %}"{% if error and error.field == "timezone" %} aria-invalid="true"{% endif %}>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
  {% if fold_choices %}
  <fieldset class="fold"{% if error and error.field == "fold" %} aria-describedby="form-error"{% endif %}>
    <legend>This time happens twice</legend>
    <p class="hint">The clocks go back then, so the same wall time happens twice in {{ form.timezone }}: choose which.</p>
    <div class="choice"><input type="radio" name="fold" id="fold-earlier" value="earlier"{% if form.fold == "earlier" %} checked{% endif %}{% if focus_fold %} autofocus{% endif %}><label for="fold-earlier">The earlier one: {{ fold_choices[0] }}</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-later" value="later"{% if form.fold == "later" %} checked{% endif %}><label for="fold-later">The later one: {{ fold_choices[1] }}</label></div>
  </fieldset>
  {% endif %}
  <div class="field release-choice">
    <label for="release">Release</label>
    <p class="hint" id="release-hint">A release sends several changes one at a time, in order, at its own time: a change added to a waiting release takes its time, not the one above.</p>
    <select id="release" name="release" aria-describedby="release-hint{% if error and error.field == 'release' %} form-error{% endif %}"{% if error and error.field == "release" %} aria-invalid="true"{% endif %}>
      <option value=""{% if not form.release %} selected{% endif %}>On its own</option>
      {% for r in releases %}<option value="{{ r.value }}"{% if form.release == r.value %} selected{% endif %}>Add it to the release {{ r.label }}</option>
      {% endfor %}<option value="new"{% if form.release == "new" %} selected{% endif %}>A new release at the time above, named below</option>
    </select>
  </div>
  <div class="field">
    <label for="release_name">Name of a new release</label>
    <input type="text" id="release_name" name="release_name" maxlength="100" value="{{ form.release_name }}"{% if error and error.field == "release_name" %} aria-invalid="true" aria-describedby="form-error"{% endif %}>
  </div>
  <button type="submit">Schedule</button>
</form>
{% elif unread %}
<p>Nothing can be scheduled until Dee Wan answers: it says which versions there are and which changes you may make.</p>
{% else %}
<p>You may not publish or unpublish this content now, so there is nothing to schedule.</p>
{% endif %}
</section>

<section aria-labelledby="list-heading">
<h2 id="list-heading">Schedules for this content</h2>
{% if page_note %}<div class="warning" role="status" data-page-corrected="{{ pager.page_number }}"><p>{{ page_note }}</p></div>{% endif %}
{{ page_info(pager) }}
{{ page_links(pager, "top") }}
{% if pager.page_number == 1 %}
{{ schedule_list(current, card_page, "Schedules for this content", empty="No schedules yet." if not history.count else "Nothing is waiting and nothing has ended lately: see the history below.") }}
{% else %}
<p>The waiting schedules and the latest ended ones are on <a href="{{ pager.first_href }}">the first page</a>.</p>
{% endif %}
{% if history.count %}
<details class="history" id="history" data-history-count="{{ history.count }}" data-replaced-count="{{ history.replaced }}"{% if history.open %} open{% endif %}>
  <summary>{{ history.summary }}</summary>
  {{ schedule_list(history.cards, card_page, "Earlier schedules", empty="") }}
</details>
{% endif %}
{{ page_links(pager, "bottom") }}
</section>
{% endblock %}
"""


# -- the page and its routes -----------------------------------------------------------------------


@dataclass(frozen=True)
class Receipt:
    """What a schedule just made says: its card, and what it replaced."""

    card: ScheduleCard
    replaced: str | None  # the replaced schedule's time, in words
    replaced_id: str | None
    replaced_version: str | None
    years_ahead: str | None  # "5 years", when it is more than a year ahead
    conflict: Conflict | None = None  # it collides with the other kind's waiting schedule
    sent_now: str | None = None  # sent now: by its clock ("clock") or the next tick ("tick")


@dataclass(frozen=True)
class History:
    """The folded part: replaced schedules and the older ended ones."""

    cards: tuple[ScheduleCard, ...]  # this page's
    count: int  # in all pages
    replaced: int  # of which were replaced by a newer schedule
    open: bool  # past the first page the history is what the person came for

    @property
    def summary(self) -> str:
        """`History: 8 earlier schedules, all replaced by a newer one`, and how many of them
        this page shows when it shows fewer (`(3 on this page)`)."""
        said = f"History: {self.count} earlier schedule{'' if self.count == 1 else 's'}"
        if self.replaced == self.count:
            said += (
                ", replaced by a newer one" if self.count == 1 else ", all replaced by a newer one"
            )
        elif self.replaced:
            said += f", {self.replaced} of them replaced by a newer one"
        if len(self.cards) != self.count:
            said += f" ({len(self.cards)} on this page)"
        return said


@dataclass(frozen=True)
class Unread:
    """Why the page shows the schedules without the content: Dee Wan could not be read."""

    code: str
    text: str
    retry_href: str  # the page again
    dee_wan_href: str  # the installation's Dee Wan


@dataclass(frozen=True)
class ContentPage:
    """The content page: the content, the form and its schedules."""

    template: ClassVar[str] = "content.html"

    title: str
    person_name: str
    content: Content | None  # None: Dee Wan could not be read (`unread`)
    content_id: str
    pins: ShownVersions | None  # what the page shows, which its forms carry
    primary_title: str | None
    site_timezone: str | None
    zones: tuple[str, ...]
    choices: tuple[Choice, ...]
    releases: tuple[Choice, ...]  # the waiting releases the change may join
    form: ScheduleForm
    time_entered: str | None  # the form's time, written the one way (the picker writes its own)
    error: FormError | None
    notice: Receipt | None
    fold_ignored: str | None
    now_zone: str
    now_label: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    flash: str | None
    cancelled_id: str | None
    page_note: str | None
    unread: Unread | None
    stale: tuple[ScheduleCard, ...]
    current: tuple[ScheduleCard, ...]
    history: History
    card_page: CardPage
    pager: Pager
    rooms: tuple[Room, ...] = ()
    news: News | None = None  # what became of the person's schedules since their last look
    proposals_href: str | None = None  # agents' proposals wait for this content: where
    # The header's Back to Dee Wan: a session proves the browser came from there.
    dee_wan_href: str | None = None


def content_page(
    view: ContentView,
    max_lateness_ms: int,
    *,
    refusal: FormRefusal | None = None,
    fold_ignored: str | None = None,
    kept: KeptForm | None = None,
) -> ContentPage:
    """`refusal` and `kept`: the form shown again (`form_part`)."""
    read, session = view.read, view.access.session
    moment = Moment(view.now_ms, max_lateness_ms)
    part = form_part(view, refusal, kept)
    site_zone = read.site.timezone if read is not None else None
    now_zone = part.zone or site_zone or "UTC"
    shown = _cards(view, moment, now_zone, kept)
    in_view = view.page.in_view if view.page_number == 1 else 0
    notice = _receipt(view, moment)
    content_id = read.content.id if read is not None else session.content_id or ""
    return ContentPage(
        title=f"Schedule {read.content.title}" if read else f"Schedules of content {content_id}",
        person_name=session.person_name,
        content=read.content if read is not None else None,
        content_id=content_id,
        pins=part.pins,
        primary_title=view.primary_title,
        site_timezone=site_zone,
        zones=offered_zones(),
        choices=part.choices,
        releases=part.releases,
        form=part.form,
        time_entered=part.time_entered,
        error=part.error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=now_in(now_zone, view.now_ms),
        fold_choices=part.fold_choices,
        focus_fold=part.focus_fold,
        flash=_cancelled(view.cancelled),
        cancelled_id=view.cancelled.id if view.cancelled else None,
        page_note=_page_note(view),
        unread=_unread(view),
        stale=tuple(card for card in shown if card.stale),
        current=shown[:in_view],
        history=_history(view, shown[in_view:]),
        card_page=card_page(
            session, pins=part.pins, back=_back(view.page_number), unread=view.unread is not None
        ),
        pager=_pager(view),
        rooms=rooms(session, "schedules"),
        dee_wan_href=view.access.installation.base_url,
    )


def _in_releases(view: ContentView, shown: tuple[ScheduleCard, ...]) -> tuple[ScheduleCard, ...]:
    """Each item of a release names it (and links to its page)."""
    named = {r.id: ReleaseRef(r.id, r.name, r.shown(view.now_ms)) for r in view.releases}
    return tuple(replace(c, release=named.get(c.release_id or "")) for c in shown)


def _page_note(view: ContentView) -> str | None:
    if view.asked_page == view.page_number:
        return None
    return f"There is no page {view.asked_page}: this is the last one, page {view.page_number}."


def _history(view: ContentView, folded: tuple[ScheduleCard, ...]) -> History:
    return History(
        cards=folded,
        count=view.page.total - view.page.in_view,
        replaced=view.page.counts.get(Status.SUPERSEDED, 0),
        open=view.page_number > 1,
    )


def _unread(view: ContentView) -> Unread | None:
    if view.unread is None:
        return None
    why = UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    text = (
        f"{why}, so this page shows the schedules as Scheduling keeps them, without the"
        " content's details, and nothing new can be scheduled until Dee Wan answers. Waiting"
        " schedules are still sent at their time and can still be cancelled."
    )
    if view.unread.code == UNTRUSTED:
        text += " If it keeps happening, tell the plugin's operator."
    again = view.access.session.href(query=_back(view.page_number))
    return Unread(view.unread.code, text, again, view.access.installation.base_url)


def _cards(
    view: ContentView, moment: Moment, now_zone: str, kept: KeptForm | None
) -> tuple[ScheduleCard, ...]:
    """Its schedules' cards. In more than one zone they are all written in the page's too, so
    they read in order."""
    zones = {row.schedule.timezone for row in view.schedules}
    viewer_zone = now_zone if len(zones) > 1 else None
    shown = _in_releases(
        view, cards(view.schedules, moment, live=view.live, viewer_zone=viewer_zone)
    )
    return shown if view.read is not None else _offer_again(shown, kept)


def _offer_again(
    shown: tuple[ScheduleCard, ...], kept: KeptForm | None
) -> tuple[ScheduleCard, ...]:
    """A Try again refused because Dee Wan could not be read: its button comes back."""
    if kept is None or kept.retry_of is None or kept.pins is None:
        return shown
    return tuple(
        replace(c, retry=RetryOffer(None, None)) if c.id == kept.retry_of else c for c in shown
    )


def _receipt(view: ContentView, moment: Moment) -> Receipt | None:
    made = view.made
    if made is None:
        return None
    replaced = view.replaced
    ahead = years_ahead(made.due_at - view.now_ms)
    return Receipt(
        card=_in_releases(view, (schedule_card(made, moment),))[0],
        replaced=instant_text(replaced.due_at, replaced.timezone) if replaced else None,
        replaced_id=replaced.id if replaced else None,
        replaced_version=replaced.version_id if replaced else None,
        years_ahead=years_text(ahead) if ahead else None,
        conflict=conflicts(view.live).get(made.id),
    )


def _cancelled(schedule: Schedule | None) -> str | None:
    """The message after a cancel names what was cancelled."""
    if schedule is None:
        return None
    change = change_text(schedule.kind, schedule.version_id)
    when = instant_text(schedule.due_at, schedule.timezone)
    return f"Cancelled: the schedule to {change} at {when}. Nothing was sent to Dee Wan."


def _back(page_number: int) -> tuple[tuple[str, str], ...]:
    return (("page", str(page_number)),) if page_number > 1 else ()


def _pager(view: ContentView) -> Pager:
    return pager(
        lambda number: view.access.session.href(query=_back(number)),
        view.page_number,
        view.page.total,
        len(view.schedules),
        view.page.has_next,
    )


async def show(request: Request, services: Services, session: Session) -> Response:
    """The content page for a session of a content launch."""
    query = request.query
    shown = await show_content(services, session, query)
    lateness = services.config.max_lateness_ms
    model = content_page(shown, lateness, fold_ignored=query.get("fold_ignored"))
    if model.notice is not None and query.get("sent_now") in ("clock", "tick"):
        model = replace(model, notice=replace(model.notice, sent_now=query.get("sent_now")))
    primary = shown.read.content.primary_id if shown.read else session.content_primary_id
    content = primary or ""
    now = services.clock.now_ms()
    waiting = await pending(services.db, session.installation_id, content, now)
    return page(
        replace(
            model,
            news=await take_news(services, shown.access, request.method, content),
            proposals_href=session.href("/agents") if waiting else None,
        )
    )


async def create_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    created = await create(services, session, ScheduleForm.posted(request.form()))
    return to_receipt(session, created)


async def retry_schedule(request: Request, services: Services) -> Response:
    """A refused schedule's Try again: a new schedule of its change, at the next minute."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await retry(services, session, request.path_params["schedule_id"], *shown)
    return to_receipt(session, created)


async def form_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A refused create or Try again: the same page again, with what was entered and what was
    wrong with it. When Dee Wan could not be read to judge the form, the page from the
    database, with the form as it was sent and the reason above it (503 while Dee Wan is
    down). Any other refusal is shown as it is (None)."""
    if isinstance(refused, FormRefusal):
        return await refused_form(services, refused)
    if refused.code not in UNREADABLE:
        return None
    fields = request.form()
    pins = posted_versions(fields.get("version_id", ""), fields.get("published_version_id", ""))
    schedule_id = request.path_params.get("schedule_id")
    if schedule_id is not None:  # a Try again: its button comes back
        kept = KeptForm(None, pins, schedule_id)
    else:
        kept = KeptForm(ScheduleForm.posted(fields).as_entered(), pins)
    access = await open_access(services, await require_session(request, services))
    view = await unread_view(services, access, refused)
    lateness = services.config.max_lateness_ms
    response = page(content_page(view, lateness, kept=kept), refused.status)
    response.headers.extend(refused.headers)
    return response


async def confirm_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A proposal's confirm refused on its form: the content page again, with the form as
    the proposal filled it and why; any other refusal is shown as it is."""
    return await refused_form(services, refused) if isinstance(refused, FormRefusal) else None


async def refused_form(services: Services, refused: FormRefusal) -> Response:
    """The content page again, with the form as entered and what was wrong with it."""
    view = await content_view(services, refused.access, refused.read)
    lateness = services.config.max_lateness_ms
    return page(content_page(view, lateness, refusal=refused), refused.status)


def to_receipt(session: Session, created: Created) -> Response:
    """The content page of the launch, with the receipt of the schedule just made."""
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = [("fold_ignored", created.fold_ignored)] if created.fold_ignored else []
    now = [("sent_now", created.sent_now)] if created.sent_now else []
    return redirect(session.href(query=[("created", created.schedule_id), *ignored, *now]))
