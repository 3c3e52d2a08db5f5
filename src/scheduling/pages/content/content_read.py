"""A content launch's page: the content as Dee Wan reports it now, and its schedules, fifty
to a page: the live ones and the latest few ended ones first, then the history.

When Dee Wan cannot be read (down, slow, or answering off the protocol) the page still
shows the content's schedules as the database holds them (`unread_view`), and says why:
nothing on it needs Dee Wan but a new schedule, and a cancel never calls Dee Wan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scheduling.actions.access import Access, open_access, read_launched_content
from scheduling.actions.listing import Listed, last_page, listed
from scheduling.actions.titles import read_titles
from scheduling.dee_wan import UNAVAILABLE
from scheduling.domain.content import ContentRead
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.refusals import Refusal
from scheduling.domain.release import Release
from scheduling.domain.rights import Rights, offered_by
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.repository import releases, schedules
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services

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
    services: Services,
    session: Session,
    *,
    page_number: int = 1,
    created: str | None = None,
    cancelled: str | None = None,
) -> ContentView:
    access = await open_access(services, session)
    try:
        read = await read_launched_content(services, access)
    except Refusal as refusal:
        return await unread_view(
            services, access, refusal, page_number=page_number, cancelled=cancelled
        )
    # The page's rights are what this read said, as the session now keeps them.
    session = access.session.having_read(read.content.primary_id, offered_by(read))
    access = replace(access, session=session)
    return await content_view(
        services, access, read, page_number=page_number, created=created, cancelled=cancelled
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
    return await _view(
        services,
        access,
        None,
        primary,
        refusal,
        page_number=page_number,
        created=None,
        cancelled=cancelled,
    )


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
    return await _view(
        services,
        access,
        read,
        read.content.primary_id,
        None,
        page_number=page_number,
        created=created,
        cancelled=cancelled,
    )


async def _view(
    services: Services,
    access: Access,
    read: ContentRead | None,
    primary: str,
    unread: Refusal | None,
    *,
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
