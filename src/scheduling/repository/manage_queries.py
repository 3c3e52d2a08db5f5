"""The manage view's reads: one page of an installation's schedules in agenda order, and counts.

Every schedule is reachable by paging, whatever the history holds. The order:
needs attention first (retrying by due time, then refused newest first), then
upcoming (pending and running by due time), then finished, newest first.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.statuses import Status, sql_list
from scheduling.ports import Database
from scheduling.repository.schedules import (
    ATTEMPT_COLUMNS,
    SCHEDULE_COLUMNS,
    Schedule,
    with_attempts,
)

PAGE_SIZE = 50

# The view's groups; their order is the default listing's order.
GROUPS: dict[str, tuple[Status, ...]] = {
    "attention": (Status.RETRYING, Status.REFUSED),
    "upcoming": (Status.PENDING, Status.RUNNING),
    "finished": (Status.COMPLETED, Status.CANCELLED, Status.SUPERSEDED),
}

# SQL text built from the constants above, never from request text.
_RANK = (
    f"CASE status WHEN '{Status.RETRYING}' THEN 0 WHEN '{Status.REFUSED}' THEN 1"
    f" WHEN '{Status.PENDING}' THEN 2 WHEN '{Status.RUNNING}' THEN 2 ELSE 3 END"
)
_BY_DUE_TIME = sql_list((Status.RETRYING, Status.PENDING, Status.RUNNING))
_ORDER = f"{_RANK}, CASE WHEN status IN {_BY_DUE_TIME} THEN due_at ELSE -updated_at END, id"


@dataclass(frozen=True)
class ManagePage:
    schedules: list[Schedule]  # at most PAGE_SIZE
    has_next: bool
    counts: dict[str, int]  # status -> rows of the installation, all groups


def group_of(status: Status) -> str:
    return next(name for name, statuses in GROUPS.items() if status in statuses)


async def manage_page(
    db: Database, installation_id: str, group: str | None, page_number: int
) -> ManagePage:
    """Page `page_number` (from 1) of `group` (None: every status), its attempts and the counts.

    One round trip. The statuses are the code's own constants, never request text.
    """
    where = "installation_id = ?1"
    if group is not None:
        where += f" AND status IN {sql_list(GROUPS[group])}"
    # One row more than a page says whether a next page exists.
    chosen = f"FROM schedules WHERE {where} ORDER BY {_ORDER} LIMIT {PAGE_SIZE + 1} OFFSET ?2"
    offset = (page_number - 1) * PAGE_SIZE
    counted, listed, attempts = await db.batch(
        [
            db.prepare(
                "SELECT status, count(*) AS n FROM schedules WHERE installation_id = ?1"
                " GROUP BY status"
            ).bind(installation_id),
            db.prepare(f"SELECT {SCHEDULE_COLUMNS} {chosen}").bind(installation_id, offset),
            db.prepare(
                f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
                f" WHERE schedule_id IN (SELECT id {chosen}) ORDER BY attempt"
            ).bind(installation_id, offset),
        ]
    )
    schedules = with_attempts(listed.results, attempts.results)
    return ManagePage(
        schedules=schedules[:PAGE_SIZE],
        has_next=len(schedules) > PAGE_SIZE,
        counts={row["status"]: row["n"] for row in counted.results},
    )
