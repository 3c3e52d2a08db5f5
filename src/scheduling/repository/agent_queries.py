"""What an agent reads of the schedules its key reaches: a filtered listing, one schedule with
its attempts, and what is due in a window. Never a title (none is kept readable)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import NOT_DONE, Status, sql_list
from scheduling.ports import Database
from scheduling.repository.schedules import (
    ATTEMPT_COLUMNS,
    SCHEDULE_COLUMNS,
    SETTLED_SQL,
)
from scheduling.repository.schedules import _with_attempts as with_attempts

LIMIT = 50


@dataclass(frozen=True)
class Filters:
    content_id: str | None = None  # the key's own content, or one asked for
    status: str | None = None
    due_from: int | None = None
    due_to: int | None = None
    needs_attention: bool = False


async def listing(
    db: Database, installation_id: str, filters: Filters, limit: int = LIMIT
) -> tuple[list[Schedule], bool]:
    """Up to `limit` schedules, soonest due first, and whether there were more."""
    where: list[str] = ["installation_id = ?"]
    values: list[object] = [installation_id]
    checks: list[tuple[object, str]] = [
        (filters.content_id, "content_id = ?"),
        (filters.status, "status = ?"),
        (filters.due_from, "due_at >= ?"),
        (filters.due_to, "due_at < ?"),
    ]
    for value, sql in checks:
        if value is not None:
            where.append(sql)
            values.append(value)
    if filters.needs_attention:
        where.append(
            f"(status = '{Status.RETRYING}' OR (status IN {sql_list(NOT_DONE)}"
            f" AND NOT {SETTLED_SQL}))"
        )
    chosen = f"FROM schedules WHERE {' AND '.join(where)} ORDER BY due_at, id LIMIT {limit + 1}"
    listed, attempts = await db.batch(
        [
            db.prepare(f"SELECT {SCHEDULE_COLUMNS} {chosen}").bind(*values),
            db.prepare(
                f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
                f" WHERE schedule_id IN (SELECT id {chosen}) ORDER BY attempt"
            ).bind(*values),
        ]
    )
    found = with_attempts(listed.results, attempts.results)
    return found[:limit], len(found) > limit


async def one(db: Database, installation_id: str, schedule_id: str) -> Schedule | None:
    chosen = "FROM schedules WHERE installation_id = ? AND id = ?"
    listed, attempts = await db.batch(
        [
            db.prepare(f"SELECT {SCHEDULE_COLUMNS} {chosen}").bind(installation_id, schedule_id),
            db.prepare(
                f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
                f" WHERE schedule_id IN (SELECT id {chosen}) ORDER BY attempt"
            ).bind(installation_id, schedule_id),
        ]
    )
    found = with_attempts(listed.results, attempts.results)
    return found[0] if found else None
