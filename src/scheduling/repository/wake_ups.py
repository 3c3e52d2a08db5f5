"""When each installation next has something due, for its alarm clock: the earliest a waiting
row is due (a retry's `next_attempt_at` included) or a running row's lease runs out.

Both read only the partial indexes by installation (`schedules_waiting_by_installation`,
`schedules_running_by_installation`) or, across installations, the runner's own two
(`schedules_waiting`, `schedules_leased`); the statuses are literal text so the planner
matches them (tests/test_store_contract.py checks the plans).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.ports import Database, Row, Statement

# One installation's next due instant (NULL: nothing live).
NEXT_DUE_SQL = """SELECT min(at) AS next_at FROM (
    SELECT min(next_attempt_at) AS at FROM schedules
     WHERE installation_id = ?1 AND status IN ('pending', 'retrying')
    UNION ALL
    SELECT min(lease_until) AS at FROM schedules
     WHERE installation_id = ?1 AND status = 'running')"""

# Every installation with something due by ?1, and the earliest it is due.
WAKE_UPS_SQL = """SELECT installation_id, min(at) AS next_at FROM (
    SELECT installation_id, next_attempt_at AS at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT installation_id, lease_until AS at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1)
 GROUP BY installation_id ORDER BY next_at, installation_id"""


def read_next_due(db: Database, installation_id: str) -> Statement:
    return db.prepare(NEXT_DUE_SQL).bind(installation_id)


def next_due_from(rows: Sequence[Row]) -> int | None:
    value = rows[0]["next_at"] if rows else None
    return None if value is None else int(value)


async def next_due(db: Database, installation_id: str) -> int | None:
    """When the installation next has something due; None when nothing is live."""
    return next_due_from([row] if (row := await read_next_due(db, installation_id).first()) else [])


def read_wake_ups(db: Database, until: int) -> Statement:
    return db.prepare(WAKE_UPS_SQL).bind(until)


def wake_ups_from(rows: Sequence[Row]) -> dict[str, int]:
    """installation -> the earliest it has something due."""
    return {str(row["installation_id"]): int(row["next_at"]) for row in rows}
