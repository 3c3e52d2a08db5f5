"""What happened since the last visit: the first page of a launch says, once, what became of the
schedules its person made since their previous launch, each with its way forward. Titles are
the ones the person saw when they scheduled (kept sealed with each schedule)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import Access
from scheduling.actions.listing import Titles
from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import Schedule
from scheduling.domain.secrets import content_title, open_or_none
from scheduling.domain.times import instant_text, rfc3339
from scheduling.domain.wording import KIND, STATUS, content_text
from scheduling.repository import people
from scheduling.repository.installations import Session, take_news_since
from scheduling.services import Services

MAX_NEWS = 10

# How each outcome reads, and what to do about it from its card.
_OUTCOMES = {
    Status.COMPLETED: ("done", "Done", "See it"),
    Status.REFUSED: ("refused", STATUS[Status.REFUSED], "See why, and try again"),
    "stale": ("stale", "Needs a new pin: the other change ran first", "Pin it again"),
}


@dataclass(frozen=True)
class NewsItem:
    schedule_id: str
    what: str  # `Publish version ver_3 of “Summer news”`
    when: str
    outcome: str  # done | refused | stale
    label: str
    way: str
    href: str | None  # its card, where this launch can show it


@dataclass(frozen=True)
class News:
    since: str
    since_iso: str
    items: tuple[NewsItem, ...]
    more: int


async def take_news(
    services: Services, access: Access, method: str, primary: str | None = None
) -> News | None:
    """The news of the session's first page (a GET: a HEAD uses nothing up), or None.
    `primary`: the launched content's primary id, as its read just said."""
    session = access.session
    if method != "GET":
        return None
    since = await take_news_since(services.db, session)
    if since is None:
        return None
    found = await people.news(
        services.db, session.installation_id, session.person_id, since, MAX_NEWS + 1
    )
    if not found:
        return None
    items = [await _item(services, access, x, primary) for x in found[:MAX_NEWS]]
    zone = found[0].schedule.timezone
    return News(
        instant_text(since, zone), rfc3339(since), tuple(items), max(0, len(found) - MAX_NEWS)
    )


async def _item(
    services: Services, access: Access, listed: people.Listed, primary: str | None
) -> NewsItem:
    schedule, session = listed.schedule, access.session
    title = await title_of(services, listed, None, session.person_id, session.context_kind)
    outcome, label, way = _OUTCOMES[schedule.status if not schedule.needs_repin else "stale"]
    return NewsItem(
        schedule_id=schedule.id,
        what=f"{KIND.get(schedule.kind, schedule.kind)} version {schedule.version_id} of"
        f" {content_text(schedule.content_id, title)}",
        when=instant_text(schedule.due_at, schedule.timezone),
        outcome=outcome,
        label=label,
        way=way,
        href=card_href(session, schedule, primary),
    )


def card_href(session: Session, schedule: Schedule, primary: str | None = None) -> str | None:
    """A schedule's card where the session's launch shows it: a manage launch, every card
    (the manage view narrowed to it); a content launch, its own content's (`primary`)."""
    if session.context_kind == "manage":
        return session.href(query=[("schedule", schedule.id)]) + f"#schedule-{schedule.id}"
    if schedule.content_id == (primary or session.content_primary_id):
        return session.href() + f"#schedule-{schedule.id}"
    return None


async def title_of(
    services: Services,
    listed: people.Listed,
    titles: Titles | None,
    person_id: str,
    context_kind: str,
) -> str | None:
    """The content's title as read now; else the one its schedule keeps, when the person saw
    it (they made the schedule) or may see every content (a manage launch); else None."""
    schedule = listed.schedule
    read = titles.title(schedule.content_id) if titles is not None else None
    if read is not None or listed.title_sealed is None:
        return read
    if context_kind != "manage" and schedule.requested_by != person_id:
        return None
    context = content_title(schedule.installation_id, schedule.id)
    what = f"schedule {schedule.id}: title"
    return await open_or_none(services.crypto, listed.title_sealed, context, what)
