"""A manage launch's page: every schedule of the installation, fifty to a page, in agenda order.

Titles are read live from Dee Wan with the manage delegation, a few at a time
(within SEND_CONCURRENCY), and never stored: the plugin keeps no content
snapshots. A read that fails leaves the content's id alone on its card.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from scheduling.actions.access import Access, open_access, read_content_with
from scheduling.actions.listing import Listed, listed
from scheduling.actions.notifications import (
    EndpointFormRefusal,
    NotificationsView,
    notifications_view,
)
from scheduling.concurrency import gather_limited
from scheduling.dee_wan import CoreError
from scheduling.domain.content import ContentRead
from scheduling.repository import manage_queries
from scheduling.repository.schedules import SchedulePage
from scheduling.repository.sessions import Session
from scheduling.services import Services, log

# A slow Dee Wan costs the page this long at most; titles not read by then show their ids.
TITLES_BUDGET_S = 4.0


@dataclass(frozen=True)
class ManageView:
    access: Access
    page: SchedulePage
    schedules: tuple[Listed, ...]
    site_zone: str  # as a title read reported it; UTC when none was read
    now_ms: int
    notifications: NotificationsView


async def show_manage(
    services: Services,
    session: Session,
    *,
    group: str | None,
    page_number: int,
    reveal: bool = False,
    refused: EndpointFormRefusal | None = None,
) -> ManageView:
    """Page `page_number` of `group` (None: all), each card with its content's title; and the
    installation's notification endpoints (`reveal`: a new secret waiting is shown now)."""
    access = await open_access(services, session)
    page = await manage_queries.manage_page(services.db, access.installation.id, group, page_number)
    reads = await read_titles(services, access, {s.content_id for s in page.schedules})
    return ManageView(
        access=access,
        page=page,
        schedules=listed(page.schedules, session.rights, reads),
        site_zone=next((r.site.timezone for r in reads.values() if r is not None), "UTC"),
        now_ms=services.clock.now_ms(),
        notifications=await notifications_view(services, session, reveal=reveal, refused=refused),
    )


async def read_titles(
    services: Services, access: Access, content_ids: set[str]
) -> dict[str, ContentRead | None]:
    """Each content's read with the manage delegation; None where Dee Wan did not answer it
    (in time: all the reads share one budget, so a hanging Dee Wan cannot hold the page)."""
    ids = sorted(content_ids)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TITLES_BUDGET_S

    async def read_one(content_id: str) -> ContentRead | None:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        try:
            return await asyncio.wait_for(
                read_content_with(services, access, content_id), remaining
            )
        except CoreError as exc:
            reason = exc.code
        except TimeoutError:
            reason = "over the page's budget"
        log.info(
            "installation %s: title of %s not read: %s", access.installation.id, content_id, reason
        )
        return None

    reads = await gather_limited(
        services.config.send_concurrency, [functools.partial(read_one, cid) for cid in ids]
    )
    return dict(zip(ids, reads, strict=True))
