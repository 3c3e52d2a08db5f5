"""A content launch's page: the content as Dee Wan reports it now, and its schedules, fifty
to a page, newest first."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import Access, open_access, read_launched_content
from scheduling.actions.listing import Listed, listed
from scheduling.domain.content import ContentRead
from scheduling.domain.rights import Rights
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import Status
from scheduling.repository import schedules
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services


@dataclass(frozen=True)
class ContentView:
    access: Access
    read: ContentRead
    page: SchedulePage
    page_number: int
    schedules: tuple[Listed, ...]
    made: Schedule | None  # the schedule just created, when this page lists it
    replaced: bool  # `made` superseded an earlier schedule
    now_ms: int


async def show_content(
    services: Services, session: Session, *, page_number: int = 1, created: str | None = None
) -> ContentView:
    access = await open_access(services, session)
    read = await read_launched_content(services, access)
    return await content_view(services, access, read, page_number=page_number, created=created)


async def content_view(
    services: Services,
    access: Access,
    read: ContentRead,
    *,
    page_number: int = 1,
    created: str | None = None,
) -> ContentView:
    """The page for what `read` says now (a create refused on its form shows the same read)."""
    page = await schedules.list_for(
        services.db, access.installation.id, read.content.primary_id, page_number
    )
    made = next((s for s in page.schedules if s.id == created), None) if created else None
    return ContentView(
        access=access,
        read=read,
        page=page,
        page_number=page_number,
        schedules=listed(page.schedules, Rights.read(read), {read.content.primary_id: read}),
        made=made,
        replaced=made is not None and _replaced(made, page.schedules),
        now_ms=services.clock.now_ms(),
    )


def _replaced(made: Schedule, rows: tuple[Schedule, ...]) -> bool:
    return any(
        s.kind == made.kind and s.revision == made.revision - 1 and s.status == Status.SUPERSEDED
        for s in rows
    )
