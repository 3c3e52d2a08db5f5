"""What is waiting for the runner: the due backlog, its oldest row, and counts by status.

"Due" means what the runner's query means (lease_sql.DUE_SQL): pending or
retrying with `next_attempt_at <= now`, or running with an expired lease. Both
halves read the runner's partial indexes, so the cost follows live rows. The
statuses are literal text, as the indexes' `WHERE` must be matched word for
word; tests/test_storage_cpython.py checks them against `statuses`.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.ports import Database, Row, Statement

BACKLOG_SQL = """
WITH due AS (
    SELECT id, installation_id, due_at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT id, installation_id, due_at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1
)
SELECT COUNT(*) OVER () AS backlog, id, installation_id, due_at
  FROM due ORDER BY due_at, id LIMIT 1
"""
# How many rows are due, and whether any is: the same two halves, for the tick history's row
# and for /healthz.
DUE_COUNT_SQL = """(SELECT count(*) FROM (
    SELECT 1 FROM schedules WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT 1 FROM schedules WHERE status = 'running' AND lease_until <= ?1))"""
WORK_DUE_SQL = """(EXISTS (SELECT 1 FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1)
  OR EXISTS (SELECT 1 FROM schedules WHERE status = 'running' AND lease_until <= ?1))"""
# Live rows now, finished rows over a recent window. The halves read the partial
# indexes `schedules_waiting`, `schedules_leased`, `schedules_one_live` (a release's queued
# items) and `schedules_finished`, so the
# cost (and D1's rows-read bill) follows live rows and recent activity, never
# the whole history.
LIVE_COUNTS_SQL = """
SELECT status, COUNT(*) AS n FROM schedules
 WHERE status IN ('pending', 'retrying') GROUP BY status
UNION ALL
SELECT 'running' AS status, COUNT(*) AS n FROM schedules WHERE status = 'running'
UNION ALL
SELECT 'queued' AS status, COUNT(*) AS n FROM schedules
 WHERE status IN ('pending', 'retrying', 'queued', 'running') AND status = 'queued'
"""
COUNTS_SQL = (
    LIVE_COUNTS_SQL
    + """UNION ALL
SELECT status, COUNT(*) AS n FROM schedules
 WHERE status IN ('completed', 'refused', 'cancelled', 'superseded', 'held') AND updated_at >= ?1
 GROUP BY status
"""
)


@dataclass(frozen=True)
class Backlog:
    """How many schedules are due and unsent, and the oldest of them."""

    size: int
    oldest_id: str | None = None
    oldest_installation_id: str | None = None
    oldest_due_at: int | None = None


def read_backlog(db: Database, now: int) -> Statement:
    return db.prepare(BACKLOG_SQL).bind(now)


def backlog_from(rows: list[Row]) -> Backlog:
    if not rows:
        return Backlog(0)
    row = rows[0]
    return Backlog(int(row["backlog"]), row["id"], row["installation_id"], int(row["due_at"]))


def read_counts(db: Database, finished_since: int) -> Statement:
    return db.prepare(COUNTS_SQL).bind(finished_since)


def read_live_counts(db: Database) -> Statement:
    return db.prepare(LIVE_COUNTS_SQL)


def counts_from(rows: list[Row]) -> dict[str, int]:
    return {str(row["status"]): int(row["n"]) for row in rows}
