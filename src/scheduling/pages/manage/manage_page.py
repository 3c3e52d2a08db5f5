"""The manage view (a manage launch): `GET /installations/{id}` shows it; a refused schedule
is dismissed from its Needs attention.

The view as the template reads it: filters with counts, the agenda by day in a chosen zone,
the finished group with its replaced schedules folded away, the pager, and a word for
everything the view could not do as asked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.dismiss import dismiss_schedule as dismiss
from scheduling.actions.titles import Titles
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.domain.time_words import instant_text
from scheduling.domain.timezones import offered_zones, quoted, zone_suggestions
from scheduling.domain.wording import change_text, content_text
from scheduling.http.guards import require_form_post
from scheduling.http.html import time_labels
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
from scheduling.http.listing_query import SHOWS, back_query, ignored, page_number, view_query
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.manage.manage_read import ManageView, show_manage
from scheduling.pages.since_last_visit import News, take_news
from scheduling.repository.manage_queries import group_count
from scheduling.repository.sessions import Session
from scheduling.services import Services

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

    href = _Hrefs(session, show, number, zone)
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
        zone_problem=_zone_problem(typed_zone, zone),
        zone_suggestions=tuple(Suggestion(n, href(zone=n)) for n in zone_suggestions(typed_zone)),
        notes=_notes(view, unused),
        titles_note=_titles_note(view.titles),
        titles_missing=view.titles.late + view.titles.failed,
        zones=offered_zones(),
        now_label=instant_text(view.now_ms, zone),
        sections=_sections(shown, zone, view.page.counts.get(Status.SUPERSEDED, 0)),
        card_page=card_page(session, viewer_zone=zone, back=back),
        pager=_pager(view, show, shown, href),
        zone_note=_zone_note(view) if "zone" not in chosen else None,
        rooms=rooms(session, "schedules"),
        dee_wan_href=view.access.installation.base_url,
    )


@dataclass(frozen=True)
class _Hrefs:
    """The view's address with one of its choices changed (the rest as shown)."""

    session: Session
    show: str
    page: int
    zone: str

    def __call__(
        self, show: str | None = None, page: int | None = None, zone: str | None = None
    ) -> str:
        params = {
            "show": self.show if show is None else show,
            "page": str(self.page if page is None else page),
            "zone": self.zone if zone is None else zone,
        }
        if params["show"] == "all":
            del params["show"]
        if params["page"] == "1":
            del params["page"]
        return self.session.href(query=params.items())


def _filters(view: ManageView, show: str, href: _Hrefs) -> tuple[Filter, ...]:
    return tuple(
        Filter(name, LABELS[name], _count(view, name), name == show, href(name, 1))
        for name in SHOWS
    )


def _pager(view: ManageView, show: str, shown: tuple[ScheduleCard, ...], href: _Hrefs) -> Pager:
    total = len(shown) if view.only else _count(view, show)
    return pager(
        lambda page: href(page=page), view.page_number, total, len(shown), view.page.has_next
    )


def _zone_problem(typed: str, zone: str) -> str | None:
    """A zone typed that is none: said, with the zone shown instead."""
    if not typed:
        return None
    return f"“{quoted(typed)}” is not a time zone name this plugin knows; showing {zone}."


def _notes(view: ManageView, unused: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    notes = []
    if "show" in unused:
        notes.append(
            (
                "unknown_filter",
                f"There is no filter “{quoted(unused['show'])}”: showing all schedules.",
            )
        )
    if "page" in unused:
        notes.append(
            ("unknown_page", f"There is no page “{quoted(unused['page'])}”: showing page 1.")
        )
    elif view.asked_page != view.page_number:
        there = (
            "there is only one page"
            if view.page_number == 1
            else f"there are {view.page_number} pages, so this is the last one"
        )
        notes.append(("page_corrected", f"There is no page {view.asked_page}: {there}."))
    return tuple(notes)


def _zone_note(view: ManageView) -> str | None:
    """Issue 38: the zone is never changed quietly. Said when Dee Wan did not report the
    site's zone in time."""
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
            f"Dee Wan did not answer in time for {_contents(titles.late)}"
            " (it is slow or not answering right now)"
        )
    if titles.failed:
        parts.append(f"Dee Wan did not give the title of {_contents(titles.failed)}")
    if not parts:
        return None
    return "; ".join(parts) + ", so their ids are shown instead. Reload the page to try again."


def _contents(n: int) -> str:
    return "1 content" if n == 1 else f"{n} contents"


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
        key = time_labels.day_key(card.due_at, zone)
        if not days or days[-1][0] != key:
            days.append((key, time_labels.day_label(card.due_at, zone), []))
        days[-1][2].append(card)
    return tuple(Day(key, label, tuple(day)) for key, label, day in days)


async def show(request: Request, services: Services, session: Session) -> Response:
    """The manage view for a session of a manage launch."""
    query = request.query
    shown = view_query(query).get("show", "all")
    only = query.get("schedule")
    view = await show_manage(
        services,
        session,
        group=None if shown == "all" else shown,
        page_number=page_number(query),
        cancelled=query.get("cancelled"),
        dismissed=query.get("dismissed"),
        only=only if only is not None and is_id(only) else None,
    )
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
