"""A manage launch's page: every schedule of the installation, fifty to a page, in agenda order.

Titles are read live from Dee Wan with the manage delegation, a few at a time
(within SEND_CONCURRENCY) and within one budget, and never stored (`titles.py`).
A page past the last one shows the last one, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import Access, open_access
from scheduling.actions.listing import Listed, last_page, listed
from scheduling.actions.titles import Titles, read_titles
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.repository import manage_queries, schedules
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services

# A slow Dee Wan costs the page this long at most; titles not read by then show their ids (issue
# 38: 4 s on top of a slow launch made a 10 s wait with no sign of progress).
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
    # Where `site_zone` came from (issue 38: it is said, never changed quietly): "site"
    # (Dee Wan reported it), "latest" (no read answered in time: the zone the latest schedule
    # listed was entered in), "utc" (neither).
    zone_from: str = "site"


async def show_manage(
    services: Services,
    session: Session,
    *,
    group: str | None,
    page_number: int,
    cancelled: str | None = None,
    dismissed: str | None = None,
    only: str | None = None,
) -> ManageView:
    """Page `page_number` of `group` (None: all), each card with its content's title."""
    access = await open_access(services, session)
    installation_id = access.installation.id
    db = services.db
    page = await manage_queries.manage_page(db, installation_id, group, page_number, only=only)
    shown = page_number
    if not page.schedules and page_number > 1 and only is None:
        # Past the end: show the last page there is (what the counts of the filter say).
        shown = last_page(manage_queries.group_count(page, group))
        if shown != page_number:
            page = await manage_queries.manage_page(db, installation_id, group, shown)
    ended = await _ended(services, installation_id, cancelled, Status.CANCELLED)
    put_aside = await _ended(services, installation_id, dismissed, Status.REFUSED)
    if put_aside is not None and put_aside.dismissed_at is None:
        put_aside = None
    content_ids = {s.content_id for s in (*page.schedules, ended, put_aside) if s is not None}
    titles = await read_titles(services, access, content_ids, budget_s=TITLES_BUDGET_S)
    zone, zone_from = site_zone(titles, page.schedules)
    return ManageView(
        access=access,
        page=page,
        page_number=shown,
        asked_page=page_number,
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
