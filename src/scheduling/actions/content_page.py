"""A content launch's page: the content as Dee Wan reports it now, and its schedules, fifty
to a page: the live ones and the latest few ended ones first, then the history."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import Access, open_access, read_launched_content
from scheduling.actions.listing import Listed, last_page, listed
from scheduling.actions.titles import read_titles
from scheduling.domain.content import ContentRead
from scheduling.domain.rights import Rights
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.repository import schedules
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services

# A translation's page names its group's main item; a slow Dee Wan costs it this long at most.
PRIMARY_TITLE_BUDGET_S = 2.0


@dataclass(frozen=True)
class ContentView:
    access: Access
    read: ContentRead
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


async def show_content(
    services: Services,
    session: Session,
    *,
    page_number: int = 1,
    created: str | None = None,
    cancelled: str | None = None,
) -> ContentView:
    access = await open_access(services, session)
    read = await read_launched_content(services, access)
    return await content_view(
        services, access, read, page_number=page_number, created=created, cancelled=cancelled
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
    db, installation_id, primary = services.db, access.installation.id, read.content.primary_id
    page = await schedules.list_for(db, installation_id, primary, page_number)
    shown = page_number
    if not page.schedules and page_number > 1 and page.total:
        shown = last_page(page.total)
        page = await schedules.list_for(db, installation_id, primary, shown)
    made = next((s for s in page.schedules if s.id == created), None) if created else None
    if made is not None and made.status != Status.PENDING:
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
        schedules=listed(page.schedules, Rights.read(read), {primary: read}),
        live=page.live,
        made=made,
        replaced=await schedules.replaced_by(db, made) if made is not None else None,
        cancelled=ended,
        primary_title=await _primary_title(services, access, read),
        now_ms=services.clock.now_ms(),
    )


async def _primary_title(services: Services, access: Access, read: ContentRead) -> str | None:
    """A translation's schedules are its group's main item's: name that item by its title."""
    primary = read.content.primary_id
    if primary == read.content.id:
        return None
    titles = await read_titles(services, access, {primary}, budget_s=PRIMARY_TITLE_BUDGET_S)
    return titles.title(primary)
