"""What is purged past the retention window, in bounded steps.

A step is one D1 round trip of `STEP_STATEMENTS` statements, each bounded by `rows`: the
attempts of up to `rows` finished schedules that ended before the cutoff (never an item of a
release that has not ended), those schedules, and up to `rows` deliveries that were delivered or
failed before it. A release goes with its last item (migration 0021's trigger). Every read goes
through an index of what may be purged (`schedules_finished`, the attempts' primary key,
`webhook_deliveries_finished`), so a step costs what it deletes, never the size of the
tables, and the runner's partial indexes of live rows are not touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.ports import Database, Result, Statement

# Must match `schedules_finished`'s WHERE word for word, so its statuses are literal text
# (tests/test_storage_cpython.py checks them against `statuses.FINISHED`). Without an ORDER
# BY the index gives its first `rows` entries; read the same way twice within one batch,
# they are the same rows.
_EXPIRED = """SELECT id FROM schedules
     WHERE status IN ('completed', 'refused', 'cancelled', 'superseded', 'held') AND updated_at < ?1
       AND (release_id IS NULL OR release_id IN (SELECT id FROM releases WHERE ended_at < ?1))
     LIMIT ?2"""
EXPIRED_ATTEMPTS_SQL = f"DELETE FROM schedule_attempts WHERE schedule_id IN ({_EXPIRED})"
# A schedule goes only with its attempts gone (their key refers to it).
EXPIRED_SCHEDULES_SQL = f"""DELETE FROM schedules WHERE id IN ({_EXPIRED})
   AND NOT EXISTS (SELECT 1 FROM schedule_attempts WHERE schedule_id = schedules.id)
RETURNING id"""
EXPIRED_DELIVERIES_SQL = """DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE finished_at < ?1 LIMIT ?2)"""
STEP_STATEMENTS = 3


@dataclass(frozen=True)
class Purged:
    """Rows one step deleted."""

    attempts: int
    schedules: int
    deliveries: int


def step(db: Database, cutoff: int, rows: int) -> list[Statement]:
    """One step's statements: what ended before `cutoff`, up to `rows` of each kind."""
    return [
        db.prepare(sql).bind(cutoff, rows)
        for sql in (EXPIRED_ATTEMPTS_SQL, EXPIRED_SCHEDULES_SQL, EXPIRED_DELIVERIES_SQL)
    ]


def purged(results: list[Result]) -> Purged:
    """What one step deleted: the schedules by what they returned (D1 counts the releases
    their trigger deleted in `changes` too)."""
    attempts, schedules, deliveries = results
    return Purged(attempts.meta.changes, len(schedules.results), deliveries.meta.changes)
