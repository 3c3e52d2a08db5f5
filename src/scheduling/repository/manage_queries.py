"""The manage view's reads: one page of an installation's schedules in agenda order, and counts.

Every schedule is reachable by paging, whatever the history holds. The order:
needs attention first (retrying by due time, then refused newest first), then
upcoming (pending and running by due time), then finished, newest first, with the
replaced ones after the rest (the page folds them away).
"""

from __future__ import annotations

from scheduling.domain.statuses import GROUPS, Status, sql_list
from scheduling.ports import Database
from scheduling.repository.schedules import SchedulePage, listing

# SQL text built from the constants above, never from request text.
_RANK = (
    f"CASE status WHEN '{Status.RETRYING}' THEN 0 WHEN '{Status.REFUSED}' THEN 1"
    f" WHEN '{Status.PENDING}' THEN 2 WHEN '{Status.RUNNING}' THEN 2"
    f" WHEN '{Status.SUPERSEDED}' THEN 4 ELSE 3 END"
)
_BY_DUE_TIME = sql_list((Status.RETRYING, Status.PENDING, Status.RUNNING))
_ORDER = f"{_RANK}, CASE WHEN status IN {_BY_DUE_TIME} THEN due_at ELSE -updated_at END, id"


async def manage_page(
    db: Database, installation_id: str, group: str | None, page_number: int
) -> SchedulePage:
    """Page `page_number` (from 1) of `group` (None: every status), its attempts and the counts.

    One round trip. The statuses are the code's own constants, never request text.
    """
    return await listing(
        db,
        "installation_id = ?1",
        (installation_id,),
        order=_ORDER,
        page_number=page_number,
        narrowed_to="" if group is None else f" AND status IN {sql_list(GROUPS[group])}",
    )
