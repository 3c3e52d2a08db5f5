"""The manage view of a manage launch: every schedule of the installation in agenda order, titles
read live within a budget; and the routes of the notification endpoints' forms.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from scheduling.actions import notifications
from scheduling.actions.access import Access, open_access
from scheduling.actions.listing import Listed, Titles, last_page, listed, read_titles
from scheduling.actions.notifications import EndpointForm, EndpointFormRefusal
from scheduling.actions.schedules import dismiss_schedule as dismiss
from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import Schedule
from scheduling.domain.secrets import is_id
from scheduling.domain.times import instant_text, offered_zones, quoted, zone_suggestions
from scheduling.domain.wording import Refusal, change_text, content_text, counted
from scheduling.http.html.render import Room, day_key, day_label, page, rooms
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    ScheduleCard,
    card_page,
    cards,
    pager,
)
from scheduling.http.requests import SHOWS, Request, back_query, ignored, page_number, view_query
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.pages.notifications import (
    Lines,
    NotificationsPage,
    endpoint_confirm_page,
    notifications_section,
)
from scheduling.pages.since_last_visit import News, take_news
from scheduling.repository import schedules
from scheduling.repository.installations import Session, take_notice
from scheduling.repository.schedules import SchedulePage, group_count
from scheduling.services import Services

# -- what the view reads ---------------------------------------------------------------------------

# A slow Dee Wan costs the page this long at most; titles not read by then show their ids
# (4 s on top of a slow launch would make a 10 s wait with no sign of progress).
TITLES_BUDGET_S = 2.5


@dataclass(frozen=True)
class ManageView:
    """What the manage page shows: a page of the installation's schedules and their titles."""

    access: Access
    page: SchedulePage
    page_number: int  # the page shown: the last one when the one asked for is past it
    asked_page: int  # the page asked for
    schedules: tuple[Listed, ...]
    titles: Titles
    site_zone: str  # as a title read reported it; else the latest schedule's; else UTC
    cancelled: Schedule | None  # the schedule a cancel just ended, to name it
    dismissed: Schedule | None  # the one a dismiss just took out of Needs attention
    only: str | None  # the one schedule shown, when a link asked for one
    now_ms: int
    # Where `site_zone` came from (it is said, never changed quietly): "site"
    # (Dee Wan reported it), "latest" (no read answered in time: the zone the latest schedule
    # listed was entered in), "utc" (neither).
    zone_from: str = "site"


async def show_manage(services: Services, session: Session, query: Mapping[str, str]) -> ManageView:
    """The page of the installation's schedules `query` asks for (its `show`, `page` and
    `schedule`), each card with its content's title."""
    chosen = view_query(query).get("show", "all")
    group = None if chosen == "all" else chosen
    asked, only = page_number(query), query.get("schedule")
    only = only if only is not None and is_id(only) else None
    access = await open_access(services, session)
    installation_id = access.installation.id
    db = services.db
    page = await schedules.manage_page(db, installation_id, group, asked, only=only)
    shown = asked
    if not page.schedules and asked > 1 and only is None:
        # Past the end: show the last page there is (what the counts of the filter say).
        shown = last_page(schedules.group_count(page, group))
        if shown != asked:
            page = await schedules.manage_page(db, installation_id, group, shown)
    ended = await _ended(services, installation_id, query.get("cancelled"), Status.CANCELLED)
    put_aside = await _ended(services, installation_id, query.get("dismissed"), Status.REFUSED)
    if put_aside is not None and put_aside.dismissed_at is None:
        put_aside = None
    content_ids = {s.content_id for s in (*page.schedules, ended, put_aside) if s is not None}
    titles = await read_titles(services, access, content_ids, budget_s=TITLES_BUDGET_S)
    zone, zone_from = site_zone(titles, page.schedules)
    return ManageView(
        access=access,
        page=page,
        page_number=shown,
        asked_page=asked,
        schedules=listed(page.schedules, session.rights, titles.reads),
        titles=titles,
        site_zone=zone,
        zone_from=zone_from,
        cancelled=ended,
        dismissed=put_aside,
        only=only if only is not None and page.schedules else None,
        now_ms=services.clock.now_ms(),
    )


def site_zone(titles: Titles, listed: tuple[Schedule, ...] = ()) -> tuple[str, str]:
    """The site's zone as a read reported it; when none answered in time, the zone the latest
    schedule listed was entered in (what an editor of the site chose last); else UTC."""
    read = next((r.site.timezone for r in titles.reads.values() if r is not None), None)
    if read is not None:
        return read, "site"
    if listed:
        return max(listed, key=lambda s: s.created_at).timezone, "latest"
    return "UTC", "utc"


async def _ended(
    services: Services, installation_id: str, schedule_id: str | None, status: Status
) -> Schedule | None:
    """The schedule a cancel or a dismiss just changed, to name it (when it is so now)."""
    if schedule_id is None or not is_id(schedule_id):
        return None
    found = await schedules.get(services.db, installation_id, schedule_id)
    return found if found is not None and found.status == status else None


# -- the template ----------------------------------------------------------------------------------

MANAGE = """{% extends "base.html" %}
{% from "cards.html" import schedule_list %}
{% from "pager.html" import page_links %}
{% block main %}
<h1>All schedules</h1>
<p>Every schedule of this installation: what needs attention first, then what is coming up by day, then what is finished. To create one, use <strong>Schedule</strong> on a content item in Dee Wan. To be told when one cannot be kept, see {% for r in rooms if r.name == "notifications" %}<a href="{{ r.href }}">Notifications</a>{% else %}Notifications{% endfor %}.</p>
{% include "news.html" %}
{% if flash %}<div class="notice" role="status"{% if cancelled_id %} data-cancelled="{{ cancelled_id }}"{% endif %}{% if dismissed_id %} data-dismissed="{{ dismissed_id }}"{% endif %}><p>{{ flash }}</p></div>{% endif %}

<nav class="filters" aria-label="Show schedules">
  <ul>
  {% for f in filters %}
    <li><a href="{{ f.href }}" data-filter="{{ f.name }}" data-count="{{ f.count }}"{% if f.current %} aria-current="page"{% endif %}>{{ f.label }} <span class="count">({{ f.count }})</span></a></li>
  {% endfor %}
  </ul>
</nav>

<form method="get" action="/installations/{{ installation_id }}" class="zone-form">
  {% if tab %}<input type="hidden" name="tab" value="{{ tab }}">{% endif %}
  {% if show != "all" %}<input type="hidden" name="show" value="{{ show }}">{% endif %}
  {% if page_number > 1 %}<input type="hidden" name="page" value="{{ page_number }}">{% endif %}
  <div class="field">
    <label for="agenda-zone">Days and times in</label>
    <p class="hint" id="agenda-zone-hint">{% if zone_note %}<span data-zone-note>{{ zone_note }}</span> {% endif %}An IANA name such as Europe/Paris, in any case; type to see suggestions.</p>
    <div class="inline">
      <input type="text" id="agenda-zone" name="zone" list="zones" autocomplete="off" spellcheck="false" value="{{ zone_input }}" aria-describedby="agenda-zone-hint{% if zone_problem %} zone-problem{% endif %}"{% if zone_problem %} aria-invalid="true"{% endif %}>
      <button type="submit">Show</button>
    </div>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
</form>
{% if zone_problem %}<div class="problem" role="alert" id="zone-problem" data-error-code="unknown_timezone"><p>{{ zone_problem }}{% if zone_suggestions %} Did you mean {% for s in zone_suggestions %}<a href="{{ s.href }}" data-zone-suggestion="{{ s.zone }}">{{ s.zone }}</a>{% if not loop.last %}{% if loop.revindex == 2 %} or {% else %}, {% endif %}{% endif %}{% endfor %}?{% endif %}</p><p class="support">For support: code unknown_timezone.</p></div>{% endif %}
{% for what, sentence in notes %}<div class="warning" role="status" data-notice="{{ what }}"><p>{{ sentence }}</p></div>{% endfor %}
{% if only_href %}<div class="warning" role="status" data-notice="one_schedule"><p>Showing the one schedule a link asked for. <a href="{{ only_href }}">Show all schedules</a>.</p></div>{% endif %}
{% if titles_note %}<div class="warning" role="status" data-titles-missing="{{ titles_missing }}"><p>{{ titles_note }}</p></div>{% endif %}

<p class="page-info" data-page="{{ pager.page_number }}" data-zone="{{ zone }}">{% if pager.total and pager.last_shown >= pager.first_shown %}Showing {{ pager.first_shown }}–{{ pager.last_shown }} of {{ pager.total }}, page {{ pager.page_number }} of {{ pager.last_page }}. {% endif %}Now in {{ zone }}: {{ now_label }}.</p>
{{ page_links(pager, "top") }}

{% for section in sections %}
<section aria-labelledby="group-{{ section.name }}" data-group="{{ section.name }}">
  <h2 id="group-{{ section.name }}">{{ section.label }}</h2>
  {% if section.days %}
  {% for day in section.days %}
  <h3 class="day" id="day-{{ day.key }}" data-day="{{ day.key }}">{{ day.label }}</h3>
  {{ schedule_list(day.cards, card_page, section.label ~ ", " ~ day.label, 4) }}
  {% endfor %}
  {% else %}
  {{ schedule_list(section.cards, card_page, section.label, 3, empty="") }}
  {% endif %}
  {% if section.replaced %}
  <details class="history" data-replaced-count="{{ section.replaced_total }}"{% if not section.cards %} open{% endif %}>
    <summary>Replaced by a newer schedule: {{ section.replaced_total }}{% if section.replaced|length != section.replaced_total %} ({{ section.replaced|length }} on this page){% endif %}</summary>
    {{ schedule_list(section.replaced, card_page, "Replaced by a newer schedule", 3, empty="") }}
  </details>
  {% endif %}
</section>
{% else %}
<p class="empty">{% if show != "all" %}No schedules here.{% else %}No schedules yet.{% endif %}</p>
{% endfor %}

{{ page_links(pager, "bottom") }}
{% endblock %}
"""


# -- the page and its routes -----------------------------------------------------------------------

LABELS = {
    "all": "All",
    "attention": "Needs attention",
    "upcoming": "Upcoming",
    "finished": "Finished",
}


@dataclass(frozen=True)
class Filter:
    """One status filter of the manage page, with its count."""

    name: str
    label: str
    count: int
    current: bool
    href: str


@dataclass(frozen=True)
class Day:
    """The schedules of one day on the manage page."""

    key: str
    label: str
    cards: tuple[ScheduleCard, ...]


@dataclass(frozen=True)
class Section:
    """Consecutive cards of one group; upcoming ones are also split by day, and finished ones
    keep the replaced ones apart (`replaced`), folded."""

    name: str
    label: str
    cards: tuple[ScheduleCard, ...]
    days: tuple[Day, ...]
    replaced: tuple[ScheduleCard, ...] = ()
    replaced_total: int = 0  # in the whole installation


@dataclass(frozen=True)
class Suggestion:
    """A zone offered for one typed that names none."""

    zone: str
    href: str


@dataclass(frozen=True)
class ManagePage:
    """The manage page: the installation's schedules, by day."""

    template: ClassVar[str] = "manage.html"

    title: str
    person_name: str
    installation_id: str
    tab: str | None
    flash: str | None
    cancelled_id: str | None
    dismissed_id: str | None
    only_href: str | None  # showing the one schedule a link asked for: the way back to all
    filters: tuple[Filter, ...]
    show: str
    page_number: int
    zone: str
    zone_input: str
    zone_problem: str | None
    zone_suggestions: tuple[Suggestion, ...]
    notes: tuple[tuple[str, str], ...]  # (what, sentence): a filter or a page not used as asked
    titles_note: str | None
    titles_missing: int
    zones: tuple[str, ...]
    now_label: str
    sections: tuple[Section, ...]
    card_page: CardPage
    pager: Pager
    zone_note: str | None  # which zone is shown and why, when it is not the site's as read
    rooms: tuple[Room, ...] = ()
    news: News | None = None  # what became of the person's schedules since their last look
    # The header's Back to Dee Wan: a session proves the browser came from there.
    dee_wan_href: str | None = None


def manage_page(view: ManageView, max_lateness_ms: int, query: Mapping[str, str]) -> ManagePage:
    """`query` is the request's: its checked `show`, `page` and `zone` choose the view."""
    chosen, unused = view_query(query), ignored(query)
    show = chosen.get("show", "all")
    zone = chosen.get("zone", view.site_zone)
    session = view.access.session
    shown = cards(view.schedules, Moment(view.now_ms, max_lateness_ms), viewer_zone=zone)
    number = view.page_number

    href = _hrefs(session, show, number, zone)
    typed_zone = unused.get("zone", "")
    back = sorted(view_query({"show": show, "page": str(number), "zone": zone}).items())
    return ManagePage(
        title="All schedules",
        person_name=session.person_name,
        installation_id=session.installation_id,
        tab=session.tab,
        flash=_flash(view, zone),
        cancelled_id=view.cancelled.id if view.cancelled else None,
        dismissed_id=view.dismissed.id if view.dismissed else None,
        only_href=href() if view.only else None,
        filters=_filters(view, show, href),
        show=show,
        page_number=number,
        zone=zone,
        zone_input=typed_zone.strip() or zone,
        zone_problem=zone_problem(typed_zone, zone),
        zone_suggestions=tuple(Suggestion(n, href(zone=n)) for n in zone_suggestions(typed_zone)),
        notes=_notes(view, unused),
        titles_note=_titles_note(view.titles),
        titles_missing=view.titles.late + view.titles.failed,
        zones=offered_zones(),
        now_label=instant_text(view.now_ms, zone),
        sections=_sections(shown, zone, view.page.counts.get(Status.SUPERSEDED, 0)),
        card_page=card_page(session, back=back),
        pager=_pager(view, show, shown, href),
        zone_note=_zone_note(view) if "zone" not in chosen else None,
        rooms=rooms(session, "schedules"),
        dee_wan_href=view.access.installation.base_url,
    )


def _hrefs(session: Session, show: str, page: int, zone: str) -> Callable[..., str]:
    """The view's address with some of its choices changed (the rest as shown)."""

    def href(show: str = show, page: int = page, zone: str = zone) -> str:
        params = {"show": show, "page": str(page), "zone": zone}
        if show == "all":
            del params["show"]
        if page == 1:
            del params["page"]
        return session.href(query=params.items())

    return href


def _filters(view: ManageView, show: str, href: Callable[..., str]) -> tuple[Filter, ...]:
    return tuple(
        Filter(name, LABELS[name], _count(view, name), name == show, href(name, 1))
        for name in SHOWS
    )


def _pager(
    view: ManageView, show: str, shown: tuple[ScheduleCard, ...], href: Callable[..., str]
) -> Pager:
    total = len(shown) if view.only else _count(view, show)
    return pager(
        lambda page: href(page=page), view.page_number, total, len(shown), view.page.has_next
    )


def zone_problem(typed: str, zone: str) -> str | None:
    """A zone typed that is none: said, with the zone shown instead."""
    if not typed:
        return None
    return f"“{quoted(typed)}” is not a time zone name this plugin knows; showing {zone}."


def _notes(view: ManageView, unused: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    notes = []
    if "show" in unused:
        said = f"There is no filter “{quoted(unused['show'])}”: showing all schedules."
        notes.append(("unknown_filter", said))
    if "page" in unused:
        said = f"There is no page “{quoted(unused['page'])}”: showing page 1."
        notes.append(("unknown_page", said))
    elif view.asked_page != view.page_number:
        there = (
            "there is only one page"
            if view.page_number == 1
            else f"there are {view.page_number} pages, so this is the last one"
        )
        notes.append(("page_corrected", f"There is no page {view.asked_page}: {there}."))
    return tuple(notes)


def _zone_note(view: ManageView) -> str | None:
    """The zone is never changed quietly: said when Dee Wan did not report the site's zone in
    time."""
    if view.zone_from == "latest":
        return (
            f"Times are in {view.site_zone}, the zone of the latest schedule listed: Dee Wan did"
            " not say the site's zone in time. Choose another zone below, or reload for the"
            " site's."
        )
    if view.zone_from == "utc" and view.titles.late + view.titles.failed:
        return (
            "Times are in UTC: Dee Wan did not say the site's zone in time. Choose a zone"
            " below, or reload for the site's."
        )
    return None


def _titles_note(titles: Titles) -> str | None:
    """Why some cards show an id where a title should be."""
    parts = []
    if titles.late:
        parts.append(
            f"Dee Wan did not answer in time for {counted(titles.late, 'content')}"
            " (it is slow or not answering right now)"
        )
    if titles.failed:
        parts.append(f"Dee Wan did not give the title of {counted(titles.failed, 'content')}")
    if not parts:
        return None
    return "; ".join(parts) + ", so their ids are shown instead. Reload the page to try again."


def _flash(view: ManageView, zone: str) -> str | None:
    """The message after a cancel or a dismiss names the schedule, its time in `zone`."""
    if view.cancelled is not None:
        said = _named(view.cancelled, view.titles, zone)
        return f"Cancelled: the schedule to {said}. Nothing was sent to Dee Wan."
    if view.dismissed is not None:
        said = _named(view.dismissed, view.titles, zone)
        return (
            f"Dismissed: the schedule to {said}, which was not done. It no longer counts under"
            " Needs attention; it is kept under Finished."
        )
    return None


def _named(schedule: Schedule, titles: Titles, zone: str) -> str:
    """`publish version ver_3 of “Summer news” at …`."""
    what = content_text(schedule.content_id, titles.title(schedule.content_id))
    change = change_text(schedule.kind, schedule.version_id)
    return f"{change} of {what} at {instant_text(schedule.due_at, zone)}"


def _count(view: ManageView, show: str) -> int:
    return group_count(view.page, None if show == "all" else show)


def _sections(
    shown: tuple[ScheduleCard, ...], zone: str, replaced_total: int
) -> tuple[Section, ...]:
    """Consecutive cards of one group form a section; upcoming ones are split by day in `zone`,
    and the replaced ones of the finished group are kept apart."""
    groups: list[tuple[str, list[ScheduleCard]]] = []
    for card in shown:
        name = card.group
        if not groups or groups[-1][0] != name:
            groups.append((name, []))
        groups[-1][1].append(card)
    sections = []
    for name, group in groups:
        if name == "finished":
            kept = tuple(c for c in group if c.status != Status.SUPERSEDED)
            replaced = tuple(c for c in group if c.status == Status.SUPERSEDED)
            sections.append(Section(name, LABELS[name], kept, (), replaced, replaced_total))
        else:
            days = _days(group, zone) if name == "upcoming" else ()
            sections.append(Section(name, LABELS[name], tuple(group), days))
    return tuple(sections)


def _days(group: list[ScheduleCard], zone: str) -> tuple[Day, ...]:
    days: list[tuple[str, str, list[ScheduleCard]]] = []
    for card in group:
        key = day_key(card.due_at, zone)
        if not days or days[-1][0] != key:
            days.append((key, day_label(card.due_at, zone), []))
        days[-1][2].append(card)
    return tuple(Day(key, label, tuple(day)) for key, label, day in days)


async def show(request: Request, services: Services, session: Session) -> Response:
    """The manage view for a session of a manage launch."""
    query = request.query
    view = await show_manage(services, session, query)
    model = manage_page(view, services.config.max_lateness_ms, query)
    return page(replace(model, news=await take_news(services, view.access, request.method)))


async def dismiss_schedule(request: Request, services: Services) -> Response:
    """A refused schedule leaves Needs attention; back to the view it was dismissed from."""
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await dismiss(services.db, services.clock.now_ms(), session, schedule_id)
    return redirect(session.href(query=[("dismissed", schedule_id), *back]))


# -- the notification endpoints' routes ------------------------------------------------------------


async def page_of(request: Request, services: Services) -> Response:
    """`GET …/notifications`: the endpoints, in the zone asked for (else the site's)."""
    session = await require_session(request, services)
    zone = view_query(request.query).get("zone")
    # A secret or a notice waiting is shown by a GET only (a HEAD must not use it up).
    return await _page(services, session, zone, reveal=request.method == "GET")


async def _page(
    services: Services,
    session: Session,
    zone: str | None,
    *,
    reveal: bool = False,
    refused: EndpointFormRefusal | None = None,
) -> Response:
    view = await notifications.notifications_view(services, session, reveal=reveal, refused=refused)
    access = await open_access(services, session)
    titles = await read_titles(services, access, view.content_ids, budget_s=TITLES_BUDGET_S)
    zone = zone or site_zone(titles)[0]
    lines = Lines(zone, services.clock.now_ms(), titles, session)
    model = NotificationsPage(
        title="Notifications",
        person_name=session.person_name,
        installation_id=session.installation_id,
        card_page=card_page(session),
        zone=zone,
        notifications=notifications_section(view, lines),
        notice=await take_notice(services.db, session) if reveal else None,
        rooms=rooms(session, "notifications"),
        dee_wan_href=access.installation.base_url,
    )
    return page(model, refused.status if refused else 200)


async def add_endpoint(request: Request, services: Services) -> Response:
    """A new endpoint; a refused form comes back on the notifications page (`add_again`)."""
    session = await require_form_post(request, services)
    await notifications.add_endpoint(services, session, _posted(request.form_lists()))
    return _back(session)


async def add_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """The notifications page again, with what was entered and what was wrong with it
    (`App.handle` calls it), for the session the refusal carries; any other refusal is shown
    as it is."""
    if not isinstance(refused, EndpointFormRefusal):
        return None
    return await _page(services, refused.session, None, refused=refused)


async def _confirm(request: Request, services: Services, action: str) -> Response:
    session = await require_session(request, services)
    preview = await notifications.preview_endpoint(
        services, session, request.path_params["endpoint_id"]
    )
    zone = view_query(request.query).get("zone", "UTC")
    return page(endpoint_confirm_page(session, preview, action, zone))


# `GET …/notifications/:id/rotate` and `…/delete`: what it changes, and the form that posts it.
confirm_rotate = partial(_confirm, action="rotate")
confirm_delete = partial(_confirm, action="delete")


def _on_endpoint(
    verb: Callable[[Services, Session, str], Awaitable[object]], keeps_zone: bool = True
) -> Callable[[Request, Services], Awaitable[Response]]:
    """A posted endpoint form: `verb` on the endpoint, then back to the notifications page."""

    async def route(request: Request, services: Services) -> Response:
        session = await require_form_post(request, services)
        await verb(services, session, request.path_params["endpoint_id"])
        return _back(session, request if keeps_zone else None)

    return route


rotate_secret = _on_endpoint(notifications.rotate_secret)
delete_endpoint = _on_endpoint(notifications.delete_endpoint)
send_test = _on_endpoint(notifications.send_test, keeps_zone=False)
enable_endpoint = _on_endpoint(notifications.enable_endpoint)


async def send_again(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    params = request.path_params
    await notifications.send_again(services, session, params["endpoint_id"], params["delivery_id"])
    return _back(session, request)


async def replay_failures(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    since_hours = request.form_lists().get("since_hours", [""])[0]
    endpoint_id = request.path_params["endpoint_id"]
    await notifications.replay_failures(services, session, endpoint_id, since_hours)
    return _back(session, request)


def _posted(fields: dict[str, list[str]]) -> EndpointForm:
    """The endpoint form as the browser posted it: without a kind, the default kind."""
    form = EndpointForm(
        url=fields.get("url", [""])[0].strip(), events=tuple(fields.get("events", ()))
    )
    return replace(form, kind=fields["kind"][0]) if "kind" in fields else form


def _back(session: Session, request: Request | None = None) -> Response:
    """Back to the notifications page, in the zone the form came from."""
    zone = view_query(request.form()).get("zone") if request is not None else None
    return redirect(session.href("/notifications", [("zone", zone)] if zone else ()))
