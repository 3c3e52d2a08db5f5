"""The runner's lease contract, as statements.

- A row is *due* when it is pending/retrying with `next_attempt_at <= now`, or
  running with `lease_until <= now` (its runner died).
- A *claim* is a compare-and-set on what the runner observed (status, lease
  token, attempt count): it sets running, a fresh lease token,
  `lease_until = now + lease`, `attempt_count + 1`, and opens an attempt row.
  At most one of two concurrent claims on the same row can win.
- A *settle* ends the claim and applies only while the claim's own lease token
  still holds; once the lease has expired another runner may reclaim the row.
Every tick costs three round trips whatever the number of rows: one query,
one batch of claims, one batch of settles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ports import Database, Row, Statement

DUE_SQL = """
WITH due AS (
    SELECT id, next_attempt_at AS ready_at FROM schedules
     WHERE status IN ('pending', 'retrying') AND next_attempt_at <= ?1
    UNION ALL
    SELECT id, lease_until AS ready_at FROM schedules
     WHERE status = 'running' AND lease_until <= ?1
),
ranked AS (
    SELECT due.id, due.ready_at,
           ROW_NUMBER() OVER (PARTITION BY s.installation_id
                              ORDER BY due.ready_at, due.id) AS turn
      FROM due JOIN schedules s ON s.id = due.id
)
SELECT s.id, s.installation_id, s.content_id, s.kind, s.to_state, s.version_id,
       s.workflow_revision, s.idempotency_key, s.due_at, s.status, s.attempt_count,
       s.lease_token, s.requested_by, i.base_url, i.token_sealed
  FROM ranked
  JOIN schedules s ON s.id = ranked.id
  JOIN installations i ON i.id = s.installation_id
 WHERE ranked.turn <= ?2
 ORDER BY ranked.turn, ranked.ready_at, ranked.id
 LIMIT ?2
"""
# Round-robin: every installation's first due row, then every second, and so on.


@dataclass(frozen=True)
class DueRow:
    id: str
    installation_id: str
    content_id: str
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    idempotency_key: str
    due_at: int
    status: str
    attempt_count: int
    lease_token: str | None
    requested_by: str
    base_url: str
    token_sealed: str

    @classmethod
    def from_row(cls, row: Row) -> DueRow:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


async def due_rows(db: Database, now: int, limit: int) -> list[DueRow]:
    result = await db.prepare(DUE_SQL).bind(now, limit).all()
    return [DueRow.from_row(row) for row in result.results]


_OBSERVED = "id = ? AND status = ? AND lease_token IS ? AND attempt_count = ?"


def claim(db: Database, row: DueRow, lease_token: str, now: int, lease_ms: int) -> list[Statement]:
    """Two statements: the compare-and-set, then the attempt row (only if the claim won)."""
    return [
        db.prepare(
            "UPDATE schedules SET status = 'running', lease_token = ?, lease_until = ?,"
            " attempt_count = attempt_count + 1, next_attempt_at = NULL, updated_at = ?"
            f" WHERE {_OBSERVED}"
        ).bind(lease_token, now + lease_ms, now, *_observed(row)),
        db.prepare(
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at)"
            " SELECT id, attempt_count, ? FROM schedules WHERE id = ? AND lease_token = ?"
        ).bind(now, row.id, lease_token),
    ]


def refuse_unsent(db: Database, row: DueRow, code: str, now: int) -> Statement:
    """End a row without sending (caps reached, token unreadable), on what was observed."""
    return db.prepare(
        "UPDATE schedules SET status = 'refused', result_code = ?, next_attempt_at = NULL,"
        f" lease_token = NULL, lease_until = NULL, updated_at = ? WHERE {_OBSERVED}"
    ).bind(code, now, *_observed(row))


def finish_attempt(
    db: Database, schedule_id: str, attempt: int, code: str, http_status: int | None, now: int
) -> Statement:
    return db.prepare(
        "UPDATE schedule_attempts SET finished_at = ?, code = ?, http_status = ?"
        " WHERE schedule_id = ? AND attempt = ? AND finished_at IS NULL"
    ).bind(now, code, http_status, schedule_id, attempt)


def settle(
    db: Database,
    schedule_id: str,
    lease_token: str,
    status: str,
    result_code: str,
    next_attempt_at: int | None,
    now: int,
) -> Statement:
    return db.prepare(
        "UPDATE schedules SET status = ?, result_code = ?, next_attempt_at = ?,"
        " lease_token = NULL, lease_until = NULL, updated_at = ?"
        " WHERE id = ? AND status = 'running' AND lease_token = ?"
    ).bind(status, result_code, next_attempt_at, now, schedule_id, lease_token)


def _observed(row: DueRow) -> tuple[object, ...]:
    return (row.id, row.status, row.lease_token, row.attempt_count)


async def run_batch(db: Database, statements: Sequence[Statement]) -> list[int]:
    """Run statements in one batch; returns each one's `meta.changes`."""
    if not statements:
        return []
    return [result.meta.changes for result in await db.batch(statements)]
