"""A manage launch's page: every schedule of the installation, fifty to a page, in agenda order.

Titles are read live from Dee Wan with the manage delegation, a few at a time
(within SEND_CONCURRENCY) and within one budget, and never stored (`titles.py`).
A page past the last one shows the last one, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import Access, open_access
from scheduling.actions.listing import Listed, last_page, listed
from scheduling.actions.notifications import (
    EndpointFormRefusal,
    NotificationsView,
    notifications_view,
)
from scheduling.actions.titles import Titles, read_titles
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import GROUPS, Status
from scheduling.repository import manage_queries, schedules
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services

# A slow Dee Wan costs the page this long at most; titles not read by then show their ids.
TITLES_BUDGET_S = 4.0


@dataclass(frozen=True)
class ManageView:
    access: Access
    page: SchedulePage
    page_number: int  # the page shown: the last one when the one asked for is past it
    asked_page: int  # the page asked for
    schedules: tuple[Listed, ...]
    titles: Titles
    site_zone: str  # as a title read reported it; UTC when none was read
    cancelled: Schedule | None  # the schedule a cancel just ended, to name it
    now_ms: int
    notifications: NotificationsView


async def show_manage(
    services: Services,
    session: Session,
    *,
    group: str | None,
    page_number: int,
    cancelled: str | None = None,
    reveal: bool = False,
    refused: EndpointFormRefusal | None = None,
) -> ManageView:
    """Page `page_number` of `group` (None: all), each card with its content's title; and the
    installation's notification endpoints (`reveal`: a new secret waiting is shown now)."""
    access = await open_access(services, session)
    installation_id = access.installation.id
    page = await manage_queries.manage_page(services.db, installation_id, group, page_number)
    shown = page_number
    if not page.schedules and page_number > 1:
        # Past the end: show the last page there is (what the counts of the filter say).
        shown = last_page(_filtered_total(page, group))
        if shown != page_number:
            page = await manage_queries.manage_page(services.db, installation_id, group, shown)
    ended = await _cancelled(services, installation_id, cancelled)
    content_ids = {s.content_id for s in page.schedules}
    if ended is not None:
        content_ids.add(ended.content_id)
    titles = await read_titles(services, access, content_ids, budget_s=TITLES_BUDGET_S)
    return ManageView(
        access=access,
        page=page,
        page_number=shown,
        asked_page=page_number,
        schedules=listed(page.schedules, session.rights, titles.reads),
        titles=titles,
        site_zone=next((r.site.timezone for r in titles.reads.values() if r is not None), "UTC"),
        cancelled=ended,
        now_ms=services.clock.now_ms(),
        notifications=await notifications_view(services, session, reveal=reveal, refused=refused),
    )


def _filtered_total(page: SchedulePage, group: str | None) -> int:
    statuses = [s for g in GROUPS.values() for s in g] if group is None else GROUPS[group]
    return sum(page.counts.get(status, 0) for status in statuses)


async def _cancelled(
    services: Services, installation_id: str, schedule_id: str | None
) -> Schedule | None:
    if schedule_id is None or not is_id(schedule_id):
        return None
    found = await schedules.get(services.db, installation_id, schedule_id)
    return found if found is not None and found.status == Status.CANCELLED else None
