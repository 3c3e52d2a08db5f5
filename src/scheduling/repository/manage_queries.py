"""The manage view's reads: one page of an installation's schedules in agenda order, and counts.

Every schedule is reachable by paging, whatever the history holds. The order:
needs attention first (retrying by due time, then refused newest first), then
upcoming (pending and running by due time), then finished, newest first, with the
replaced ones after the rest (the page folds them away). A refused schedule that is
settled (dismissed, or done by a later schedule of the same change) counts as finished.
"""

from __future__ import annotations

from scheduling.domain.statuses import GROUPS, SETTLED_GROUP, Status, sql_list
from scheduling.ports import Database
from scheduling.repository.schedules import NEEDS_REPIN_SQL, SETTLED_SQL, SchedulePage, listing

# SQL text built from the constants above, never from request text. A pending schedule whose
# pin a collision put out of date needs attention too (`Schedule.needs_repin`).
# A held one (ended unsent) is seen to as a refused one is.
_NOT_DONE = sql_list((Status.REFUSED, Status.HELD))
_NEEDS_ATTENTION = f"((status IN {_NOT_DONE} AND NOT {SETTLED_SQL}) OR {NEEDS_REPIN_SQL})"
_RANK = (
    f"CASE WHEN status = '{Status.RETRYING}' THEN 0 WHEN {_NEEDS_ATTENTION} THEN 1"
    f" WHEN status IN {sql_list((Status.PENDING, Status.QUEUED, Status.RUNNING))} THEN 2"
    f" WHEN status = '{Status.SUPERSEDED}' THEN 4 ELSE 3 END"
)
_BY_DUE_TIME = sql_list((Status.RETRYING, Status.PENDING, Status.QUEUED, Status.RUNNING))
_ORDER = f"{_RANK}, CASE WHEN status IN {_BY_DUE_TIME} THEN due_at ELSE -updated_at END, id"


def _group_sql(group: str) -> str:
    """The rows of one group: its statuses, a refused or held one by whether it is settled."""
    others = sql_list(s for s in GROUPS[group] if s not in (Status.REFUSED, Status.HELD))
    if Status.REFUSED in GROUPS[group]:
        return f"(status IN {others} OR {_NEEDS_ATTENTION})"
    if group == SETTLED_GROUP:
        return f"(status IN {others} OR (status IN {_NOT_DONE} AND {SETTLED_SQL}))"
    if Status.PENDING in GROUPS[group]:
        return f"(status IN {others} AND NOT {NEEDS_REPIN_SQL})"
    return f"status IN {others}"


async def manage_page(
    db: Database,
    installation_id: str,
    group: str | None,
    page_number: int,
    *,
    only: str | None = None,
) -> SchedulePage:
    """Page `page_number` (from 1) of `group` (None: every status), or the one schedule
    `only`, with its attempts and the counts (a group's count is `group_count`).

    One round trip. The statuses are the code's own constants, never request text.
    """
    narrowed = "" if group is None else f" AND {_group_sql(group)}"
    if only is not None:
        narrowed += " AND id = ?3"
    return await listing(
        db,
        "installation_id = ?1",
        (installation_id,),
        order=_ORDER,
        page_number=page_number,
        narrowed_to=narrowed,
        narrowed_by=() if only is None else (only,),
        count_settled=True,
    )


def group_count(page: SchedulePage, group: str | None) -> int:
    """How many schedules of the installation are in `group` (None: all of them)."""
    if group is None:
        return page.total
    count = sum(page.counts.get(status, 0) for status in GROUPS[group])
    if Status.REFUSED in GROUPS[group]:
        return count - page.settled + page.stale
    if Status.PENDING in GROUPS[group]:
        return count - page.stale
    return count + (page.settled if group == SETTLED_GROUP else 0)
