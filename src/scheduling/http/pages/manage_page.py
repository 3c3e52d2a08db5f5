"""The manage view as the template reads it: filters with counts, the agenda by day in a
chosen zone, and the pager."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlencode

from scheduling.actions.manage_page import ManageView
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import GROUPS, group_of
from scheduling.domain.timezones import zone_names
from scheduling.http.listing_query import SHOWS, view_query
from scheduling.http.pages import time_labels
from scheduling.http.pages.notifications_page import NotificationsSection, notifications_section
from scheduling.http.pages.view_models import (
    CardPage,
    Moment,
    Pager,
    ScheduleCard,
    card_page,
    cards,
    pager,
)

LABELS = {
    "all": "All",
    "attention": "Needs attention",
    "upcoming": "Upcoming",
    "finished": "Finished",
}


@dataclass(frozen=True)
class Filter:
    name: str
    label: str
    count: int
    current: bool
    href: str


@dataclass(frozen=True)
class Day:
    key: str
    label: str
    cards: tuple[ScheduleCard, ...]


@dataclass(frozen=True)
class Section:
    """Consecutive cards of one group; upcoming ones are also split by day."""

    name: str
    label: str
    cards: tuple[ScheduleCard, ...]
    days: tuple[Day, ...]


@dataclass(frozen=True)
class ManagePage:
    template: ClassVar[str] = "manage.html"

    title: str
    person_name: str
    installation_id: str
    flash: str | None
    filters: tuple[Filter, ...]
    show: str
    zone: str
    zone_input: str
    zone_problem: str | None
    zones: tuple[str, ...]
    now_label: str
    sections: tuple[Section, ...]
    card_page: CardPage
    pager: Pager
    notifications: NotificationsSection


def manage_page(view: ManageView, max_lateness_ms: int, query: Mapping[str, str]) -> ManagePage:
    """`query` is the request's: its checked `show`, `page` and `zone` choose the view."""
    chosen = view_query(query)
    show = chosen.get("show", "all")
    typed_zone = query.get("zone", "").strip()
    zone = chosen.get("zone", view.site_zone)
    session = view.access.session
    shown = cards(view.schedules, Moment(view.now_ms, max_lateness_ms), viewer_zone=zone)
    number = int(chosen.get("page", "1"))

    def href(show: str = show, page: int = number) -> str:
        params = {"show": show, "page": str(page), "zone": zone}
        if show == "all":
            del params["show"]
        if page == 1:
            del params["page"]
        return f"/installations/{session.installation_id}?" + urlencode(params)

    return ManagePage(
        title="All schedules",
        person_name=session.person_name,
        installation_id=session.installation_id,
        flash="The schedule was cancelled." if is_id(query.get("cancelled")) else None,
        filters=tuple(
            Filter(name, LABELS[name], _count(view, name), name == show, href(name, 1))
            for name in SHOWS
        ),
        show=show,
        zone=zone,
        zone_input=typed_zone or zone,
        zone_problem=(
            f"{typed_zone} is not a known IANA time zone name; showing {zone}."
            if typed_zone and "zone" not in chosen
            else None
        ),
        zones=tuple(sorted(zone_names())),
        now_label=time_labels.wall(view.now_ms, zone),
        sections=_sections(shown, zone),
        card_page=card_page(
            session,
            viewer_zone=zone,
            back=sorted(view_query({"show": show, "page": str(number), "zone": zone}).items()),
        ),
        pager=pager(
            lambda page: href(page=page),
            number,
            _count(view, show),
            len(shown),
            view.page.has_next,
        ),
        notifications=notifications_section(view.notifications, zone, view.now_ms),
    )


def _count(view: ManageView, show: str) -> int:
    statuses = [s for group in GROUPS.values() for s in group] if show == "all" else GROUPS[show]
    return sum(view.page.counts.get(status, 0) for status in statuses)


def _sections(shown: tuple[ScheduleCard, ...], zone: str) -> tuple[Section, ...]:
    """Consecutive cards of one group form a section; upcoming ones are split by day in `zone`."""
    groups: list[tuple[str, list[ScheduleCard]]] = []
    for card in shown:
        name = group_of(card.status)
        if not groups or groups[-1][0] != name:
            groups.append((name, []))
        groups[-1][1].append(card)
    return tuple(
        Section(name, LABELS[name], tuple(group), _days(group, zone) if name == "upcoming" else ())
        for name, group in groups
    )


def _days(group: list[ScheduleCard], zone: str) -> tuple[Day, ...]:
    days: list[tuple[str, str, list[ScheduleCard]]] = []
    for card in group:
        key = time_labels.day_key(card.due_at, zone)
        if not days or days[-1][0] != key:
            days.append((key, time_labels.day_label(card.due_at, zone), []))
        days[-1][2].append(card)
    return tuple(Day(key, label, tuple(day)) for key, label, day in days)
