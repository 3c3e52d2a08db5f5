"""The calendar: the installation's waiting changes across contents, by day in the zone the
person chooses, a week at a time or as a list; and the person's calendar feed, made, shown once
and revoked here (`calendar_feed.py` answers it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import ClassVar

from scheduling.actions.access import Access, open_access
from scheduling.actions.listing import Titles, read_titles
from scheduling.domain.schedules import conflicts
from scheduling.domain.secrets import SHAPES
from scheduling.domain.times import get_zone, instant_text, offered_zones, rfc3339
from scheduling.domain.wording import KIND, content_text, counted
from scheduling.http.html.render import Room, day_key, day_label, page, rooms
from scheduling.http.html.view_models import CardPage, card_page
from scheduling.http.requests import Request, view_query
from scheduling.http.responses import Response, redirect
from scheduling.http.routing import require_form_post, require_session
from scheduling.limits import MAX_STORED_INTEGER
from scheduling.pages.manage import TITLES_BUDGET_S, site_zone, zone_problem
from scheduling.pages.since_last_visit import card_href, title_of
from scheduling.repository import people
from scheduling.repository.installations import Session
from scheduling.services import Services

# -- the template ----------------------------------------------------------------------------------

CALENDAR = """{% extends "base.html" %}
{% from "cards.html" import form_fields %}
{% block main %}
<h1>Calendar</h1>
<p>What is waiting to be published or unpublished across this installation's contents, by day. {{ span }}, times in {{ zone }}.</p>
{% if flash %}<div class="notice" role="status" data-done><p>{{ flash }}</p></div>{% endif %}
<form method="get" action="/installations/{{ card_page.installation_id }}/calendar" class="zone-form">
  {% if card_page.tab %}<input type="hidden" name="tab" value="{{ card_page.tab }}">{% endif %}
  {% if view == "list" %}<input type="hidden" name="view" value="list">{% endif %}
  <div class="field">
    <label for="calendar-zone">Days and times in</label>
    <div class="inline">
      <input type="text" id="calendar-zone" name="zone" list="zones" autocomplete="off" spellcheck="false" value="{{ zone }}"{% if zone_problem %} aria-invalid="true" aria-describedby="zone-problem"{% endif %}>
      <button type="submit">Show</button>
    </div>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
</form>
{% if zone_problem %}<div class="problem" role="alert" id="zone-problem" data-error-code="unknown_timezone"><p>{{ zone_problem }}</p></div>{% endif %}
{% if titles_note %}<div class="warning" role="status" data-titles-missing><p>{{ titles_note }}</p></div>{% endif %}
<nav class="pager" aria-label="Other weeks and views">{% for what, label, href in links %}<a href="{{ href }}" data-calendar-link="{{ what }}">{{ label }}</a>{% endfor %}</nav>
<ol class="calendar calendar-{{ view }}" data-calendar-view="{{ view }}" data-zone="{{ zone }}">
{% for day in days %}
  <li class="calendar-day{% if day.today %} is-today{% endif %}" data-day="{{ day.key }}"{% if day.today %} aria-current="date"{% endif %}>
    <h2 id="day-{{ day.key }}">{{ day.label }}{% if day.today %} <span class="today">(today)</span>{% endif %}</h2>
    {% if day.changes %}
    <ul aria-labelledby="day-{{ day.key }}">
    {% for c in day.changes %}
      <li class="calendar-change{% if c.flag %} is-flagged{% endif %}" data-schedule-id="{{ c.schedule_id }}" data-status="{{ c.status }}"{% if c.flag %} data-flagged="true"{% endif %}>
        <time datetime="{{ c.when_iso }}">{{ c.time_label }}</time>
        {% if c.href %}<a href="{{ c.href }}">{{ c.what }}</a>{% else %}<span>{{ c.what }}</span>{% endif %}
        {% if c.flag %}<p class="flag"><strong>Warning:</strong> {{ c.flag }}</p>{% endif %}
      </li>
    {% endfor %}
    </ul>
    {% else %}
    <p class="empty">Nothing waiting.</p>
    {% endif %}
  </li>
{% else %}
  <li><p class="empty">Nothing is waiting from today on.</p></li>
{% endfor %}
</ol>
{% if more %}<p data-more="{{ more }}">And {{ more }} more later on: show them week by week.</p>{% endif %}

<section aria-labelledby="feed-heading" class="feed">
  <h2 id="feed-heading">In your own calendar</h2>
  <p>A feed shows these changes in the calendar you already use (read only). Its address is a password: anyone who has it sees the times and titles in it. It works while you keep opening Scheduling from Dee Wan (for 30 days after the last time), and stops when you revoke it or make a new one.</p>
  {% if feed_url %}
  <div class="notice" role="status">
    <p><strong>Your feed's address: copy it now.</strong> It is shown this once; Scheduling keeps only a fingerprint of it. Add it to your calendar as a subscription (by URL).</p>
    <p><code class="secret-value" data-calendar-feed>{{ feed_url }}</code></p>
  </div>
  {% elif feed_made %}
  <p data-calendar-feed-made>You have a feed, made {{ feed_made }}. Lost its address? Make a new one: the old one stops.</p>
  {% endif %}
  <div class="inline">
    <form method="post" action="/installations/{{ card_page.installation_id }}/calendar/feed">
      {{ form_fields(card_page) }}
      <button type="submit"{% if feed_made or feed_url %} class="secondary"{% endif %}>{% if feed_made or feed_url %}Make a new address{% else %}Make a feed address{% endif %}</button>
    </form>
    {% if feed_made or feed_url %}
    <form method="post" action="/installations/{{ card_page.installation_id }}/calendar/feed/revoke">
      {{ form_fields(card_page) }}
      <button type="submit" class="danger">Revoke the feed</button>
    </form>
    {% endif %}
  </div>
</section>
{% endblock %}
"""


# -- the page and its routes -----------------------------------------------------------------------

MAX_LISTED = 500  # changes one page lists; the rest is said as a count
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Change:
    """One waiting change, as the calendar lists it."""

    schedule_id: str
    status: str
    what: str  # `Publish “Summer news”`
    time_label: str  # `09:00 CEST`
    when_iso: str
    href: str | None  # its card, where this launch shows it
    flag: str | None  # a collision, or a pin made stale: in words


@dataclass(frozen=True)
class Day:
    key: str
    label: str
    today: bool
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class CalendarPage:
    template: ClassVar[str] = "calendar.html"

    title: str
    person_name: str
    card_page: CardPage  # the session's form fields
    view: str  # week | list
    zone: str
    zone_problem: str | None
    zones: tuple[str, ...]
    span: str  # `Week of Monday 6 July 2026`, or `From today`
    links: tuple[tuple[str, str, str], ...]  # (what, label, href): other weeks, the other view
    days: tuple[Day, ...]
    more: int
    titles_note: str | None
    feed_made: str | None  # when the person's feed was made (None: they have none)
    feed_url: str | None  # just made: its address, shown this once
    flash: str | None
    rooms: tuple[Room, ...]
    dee_wan_href: str


@dataclass(frozen=True)
class _Span:
    zone: str
    start: date
    days: int | None  # None: from `start` on (the list)


async def show(
    request: Request, services: Services, session: Session, feed_url: str | None = None
) -> Response:
    query = request.query
    chosen, typed = view_query(query).get("zone"), query.get("zone", "").strip()
    access = await open_access(services, session)
    found, titles, span, today = await _read(services, access, query, chosen)
    model = await _model(services, access, span, found, titles, today)
    said = "Your calendar feed was revoked: its address no longer answers."
    return page(
        replace(
            model,
            zone_problem=None if chosen else zone_problem(typed, span.zone),
            flash=said if query.get("feed") == "revoked" else None,
            feed_url=feed_url,
        ),
        201 if feed_url else 200,
    )


async def _read(
    services: Services, access: Access, query: Mapping[str, str], chosen: str | None
) -> tuple[list[people.Listed], Titles, _Span, date]:
    """The changes around the span asked for, read in UTC with a day to spare on each side
    (the site's zone, which places the days, comes with the titles read), and the span."""
    now = services.clock.now_ms()
    listing = query.get("view") == "list"
    start = _week_asked(query.get("week", ""))
    rough = _monday(start or datetime.fromtimestamp(now / 1000, UTC).date())
    lo = now - 2 * DAY_MS if listing else _ms(rough, "UTC") - DAY_MS
    hi = MAX_STORED_INTEGER if listing else _ms(rough, "UTC") + 9 * DAY_MS
    installation_id = access.installation.id
    found = await people.waiting(services.db, installation_id, lo, hi, MAX_LISTED + 100)
    ids = {listed.schedule.content_id for listed in found}
    titles = await read_titles(services, access, ids, budget_s=TITLES_BUDGET_S)
    zone = chosen or site_zone(titles, tuple(x.schedule for x in found))[0]
    today = datetime.fromtimestamp(now / 1000, get_zone(zone)).date()
    span = _Span(zone, today if listing else _monday(start or today), None if listing else 7)
    return found, titles, span, today


def _week_asked(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        return None


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _ms(day: date, zone: str) -> int:
    """The first instant of `day` in `zone`."""
    return int(datetime(day.year, day.month, day.day, tzinfo=get_zone(zone)).timestamp() * 1000)


async def _model(
    services: Services,
    access: Access,
    span: _Span,
    found: list[people.Listed],
    titles: Titles,
    today: date,
) -> CalendarPage:
    session = access.session
    start = _ms(span.start, span.zone)
    end = (
        _ms(span.start + timedelta(days=span.days), span.zone) if span.days else MAX_STORED_INTEGER
    )
    shown = [x for x in found if start <= x.schedule.due_at < end]
    flags = conflicts(x.schedule for x in found)
    by_day: dict[str, list[Change]] = {}
    labels: dict[str, tuple[str, bool]] = {}
    for listed in shown[:MAX_LISTED]:
        due = listed.schedule.due_at
        key = day_key(due, span.zone)
        labels[key] = (day_label(due, span.zone), key == today.isoformat())
        flag = flags.get(listed.schedule.id)
        said = _STALE if listed.schedule.needs_repin else flag.text if flag else None
        change = await _change(services, session, listed, titles, span.zone, said)
        by_day.setdefault(key, []).append(change)
    if span.days:  # every day of the week, empty ones too
        for n in range(span.days):
            day = span.start + timedelta(days=n)
            noon = _ms(day, span.zone) + 12 * 3_600_000
            label = day_label(noon, span.zone)
            labels.setdefault(day.isoformat(), (label, day == today))
    made = await people.feed_made_at(services.db, session.installation_id, session.person_id)
    return CalendarPage(
        title="Calendar",
        person_name=session.person_name,
        card_page=card_page(session),
        view="week" if span.days else "list",
        zone=span.zone,
        zone_problem=None,
        zones=offered_zones(),
        span=f"Week of {labels[span.start.isoformat()][0]}" if span.days else "From today on",
        links=_links(session, span, today),
        days=tuple(Day(key, *labels[key], tuple(by_day.get(key, ()))) for key in sorted(labels)),
        more=max(0, len(shown) - MAX_LISTED),
        titles_note=_titles_note(titles),
        feed_made=instant_text(made, span.zone) if made is not None else None,
        feed_url=None,
        flash=None,
        rooms=rooms(session, "calendar"),
        dee_wan_href=access.installation.base_url,
    )


_STALE = "Needs a new pin: the other change of its content was done, so it would be refused."


async def _change(
    services: Services,
    session: Session,
    listed: people.Listed,
    titles: Titles,
    zone: str,
    flag: str | None,
) -> Change:
    """`flag`: a pin made stale, or a collision, in words."""
    schedule = listed.schedule
    title = await title_of(services, listed, titles, session.person_id, session.context_kind)
    local = datetime.fromtimestamp(schedule.due_at / 1000, get_zone(zone))
    return Change(
        schedule_id=schedule.id,
        status=schedule.status,
        what=f"{KIND.get(schedule.kind, schedule.kind)} {content_text(schedule.content_id, title)}",
        time_label=f"{local:%H:%M} {local:%Z}",
        when_iso=rfc3339(schedule.due_at),
        href=card_href(session, schedule),
        flag=flag,
    )


def _links(session: Session, span: _Span, today: date) -> tuple[tuple[str, str, str], ...]:
    zone = [("zone", span.zone)]
    if not span.days:
        return (("week", "Show by week", session.href("/calendar", zone)),)
    links = []
    for what, label, day in (
        ("prev", "Previous week", span.start - timedelta(days=7)),
        ("this", "This week", _monday(today)),
        ("next", "Next week", span.start + timedelta(days=7)),
    ):
        if what != "this" or day != span.start:
            links.append((what, label, session.href("/calendar", [("week", str(day)), *zone])))
    links.append(("list", "Show as a list", session.href("/calendar", [("view", "list"), *zone])))
    return tuple(links)


def _titles_note(titles: Titles) -> str | None:
    missing = titles.late + titles.failed
    if not missing:
        return None
    return (
        f"Dee Wan did not give the title of {counted(missing, 'content')} in"
        " time, or you may not see it: those are named by their id, or by the title you saw when"
        " you scheduled them. Reload the page to try again."
    )


async def calendar(request: Request, services: Services) -> Response:
    return await show(request, services, await require_session(request, services))


async def make_feed(request: Request, services: Services) -> Response:
    """A new feed address for the person (any earlier one stops): shown on this answer once."""
    session = await require_form_post(request, services)
    token = SHAPES["calendar_feed"].prefix + services.crypto.random_token()
    digest = await services.crypto.sha256_hex(token)
    whole = session.context_kind == "manage"
    now = services.clock.now_ms()
    await people.set_feed(
        services.db, session.installation_id, session.person_id, digest, now, whole=whole
    )
    url = f"{services.config.public_origin}/calendar-feeds/{token}.ics"
    return await show(request, services, session, feed_url=url)


async def revoke_feed(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    now = services.clock.now_ms()
    await people.set_feed(services.db, session.installation_id, session.person_id, None, now)
    return redirect(session.href("/calendar", [("feed", "revoked")]))
