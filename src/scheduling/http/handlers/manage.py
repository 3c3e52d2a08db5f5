"""The manage launch's page: every schedule of the installation, paged, filtered, as an agenda.

Titles are read live from Dee Wan with the manage delegation, a few at a time
(within SEND_CONCURRENCY), and never stored: the plugin keeps no content
snapshots. A read that fails leaves the content's id alone on its card.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any
from urllib.parse import urlencode

from scheduling.concurrency import gather_limited
from scheduling.dee_wan import ContentRead, CoreError, read_content
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.timezones import zone_names
from scheduling.http.guards import opened_for
from scheduling.http.handlers.access import Access
from scheduling.http.pages import time_labels
from scheduling.http.pages.render import page
from scheduling.http.pages.view_models import Moment, cards
from scheduling.http.requests import Request, ascii_int
from scheduling.http.responses import Response
from scheduling.repository import manage_queries
from scheduling.repository.manage_queries import GROUPS, PAGE_SIZE, group_of
from scheduling.services import Services, log

SHOWS = ("all", *GROUPS)
LABELS = {
    "all": "All",
    "attention": "Needs attention",
    "upcoming": "Upcoming",
    "finished": "Finished",
}
MAX_PAGE = 100_000
# A slow Dee Wan costs the page this long at most; titles not read by then show their ids.
TITLES_BUDGET_S = 4.0
_QUERY_NAMES = ("show", "page", "zone")


def view_query(query: dict[str, str]) -> dict[str, str]:
    """The view's own parameters from a query or a form, each checked; the rest dropped."""
    chosen: dict[str, str] = {}
    if query.get("show") in SHOWS:
        chosen["show"] = query["show"]
    number = ascii_int(query.get("page"), max_digits=len(str(MAX_PAGE)))
    if number is not None and 1 <= number <= MAX_PAGE:
        chosen["page"] = str(number)
    zone = query.get("zone", "").strip()
    if zone and time_labels.known_zone(zone):
        chosen["zone"] = zone
    return chosen


def back_query(fields: dict[str, str]) -> str:
    """After a cancel from the manage view, back to the same page, filter and zone."""
    chosen = view_query(fields)
    return "&" + urlencode(chosen) if chosen else ""


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
                read_content(
                    services.http,
                    access.installation.base_url,
                    access.token,
                    access.delegation,
                    content_id,
                ),
                remaining,
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


async def manage_view(request: Request, services: Services, access: Access) -> Response:
    query = request.query
    chosen = view_query(query)
    show = chosen.get("show", "all")
    page_number = int(chosen.get("page", "1"))
    installation_id = access.installation.id
    listing = await manage_queries.manage_page(
        services.db, installation_id, None if show == "all" else show, page_number
    )
    reads = await read_titles(services, access, {s.content_id for s in listing.schedules})
    site_zone = next((r.site.timezone for r in reads.values() if r is not None), "UTC")
    typed_zone = query.get("zone", "").strip()
    zone = chosen.get("zone", site_zone)
    now_ms = services.clock.now_ms()
    moment = Moment(now_ms, services.config.max_lateness_ms)
    views = cards(listing.schedules, moment, context_kind="manage", reads=reads, viewer_zone=zone)

    total = _count(listing.counts, show)
    last_page = max(1, -(-total // PAGE_SIZE))
    first_shown = (page_number - 1) * PAGE_SIZE + 1

    def href(**changes: Any) -> str:
        params = {"show": show, "page": str(page_number), "zone": zone, **changes}
        if params["show"] == "all":
            del params["show"]
        if params["page"] == "1":
            del params["page"]
        return f"/installations/{installation_id}?" + urlencode(params)

    cancelled = query.get("cancelled")
    return page(
        "manage.html",
        title="All schedules",
        person_name=access.session.person_name,
        installation_id=installation_id,
        flash="The schedule was cancelled." if is_id(cancelled) else None,
        filters=[
            {
                "name": name,
                "label": LABELS[name],
                "count": _count(listing.counts, name),
                "current": name == show,
                "href": href(show=name, page="1"),
            }
            for name in SHOWS
        ],
        show=show,
        zone=zone,
        zone_input=typed_zone or zone,
        zone_problem=(
            f"{typed_zone} is not a known IANA time zone name; showing {zone}."
            if typed_zone and "zone" not in chosen
            else None
        ),
        zones=sorted(zone_names()),
        now_label=time_labels.wall(now_ms, zone),
        page_number=page_number,
        last_page=last_page,
        total=total,
        first_shown=first_shown,
        last_shown=first_shown + len(views) - 1,
        sections=_sections(views, listing.schedules, zone),
        prev_href=href(page=str(page_number - 1)) if 1 < page_number <= last_page else None,
        next_href=href(page=str(page_number + 1)) if listing.has_next else None,
        last_href=href(page=str(last_page)),
        card_page={
            "installation_id": installation_id,
            "csrf_token": access.session.csrf_token,
            "opened_for": opened_for(access.session),
            "context_kind": "manage",
            "content": None,
            "show_content": True,
            "viewer_zone": zone,
            "back": sorted(
                view_query({"show": show, "page": str(page_number), "zone": zone}).items()
            ),
        },
    )


def _count(counts: dict[str, int], show: str) -> int:
    statuses = [s for group in GROUPS.values() for s in group] if show == "all" else GROUPS[show]
    return sum(counts.get(status, 0) for status in statuses)


def _sections(views: list[dict[str, Any]], rows: list[Any], zone: str) -> list[dict[str, Any]]:
    """Consecutive cards of one group form a section; upcoming ones are split by day in `zone`."""
    sections: list[dict[str, Any]] = []
    for view, row in zip(views, rows, strict=True):
        name = group_of(row.status)
        if not sections or sections[-1]["name"] != name:
            sections.append({"name": name, "label": LABELS[name], "cards": [], "days": []})
        section = sections[-1]
        section["cards"].append(view)
        if name == "upcoming":
            key = time_labels.day_key(row.due_at, zone)
            if not section["days"] or section["days"][-1]["key"] != key:
                section["days"].append(
                    {"key": key, "label": time_labels.day_label(row.due_at, zone), "cards": []}
                )
            section["days"][-1]["cards"].append(view)
    return sections
