"""What is purged past the retention window, in bounded steps.

A step is one D1 round trip of `STEP_STATEMENTS` statements, each bounded by `rows`: the
attempts of up to `rows` finished schedules that ended before the cutoff (never an item of a
release that has not ended), the proposals they were confirmed from, those schedules, and up
to `rows` deliveries that were delivered or failed before it; then what agents made that
ended before a cutoff of its own (sooner: nothing reads them long): up to `rows` proposals
declined, withdrawn or past their time, and up to `rows` agent keys expired or revoked. A
release goes with its last item (migration 0021's trigger). Every read goes through an index
of what may be purged (`schedules_finished`, the attempts' primary key,
`proposals_by_schedule`, `webhook_deliveries_finished`, `proposals_ended`,
`agent_keys_ended`), so a step costs what it deletes, never the size of the tables, and the
runner's partial indexes of live rows are not touched. (A trigger would save the confirmed
proposals' statement, but D1 counts the rows a trigger deletes among the statement's
changes.)
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
# A confirmed proposal goes with the schedule it became (whose history names the agent).
EXPIRED_PROPOSALS_SQL = f"DELETE FROM proposals WHERE schedule_id IN ({_EXPIRED})"
# Must match `proposals_ended`'s expression and WHERE word for word.
ENDED_PROPOSALS_SQL = """DELETE FROM proposals WHERE id IN (
    SELECT id FROM proposals WHERE status <> 'confirmed' AND coalesce(decided_at, due_at) < ?1
     LIMIT ?2)"""
ENDED_KEYS_SQL = """DELETE FROM agent_keys WHERE id IN (
    SELECT id FROM agent_keys WHERE expires_at < ?1 LIMIT ?2)"""
STEP_STATEMENTS = 6


@dataclass(frozen=True)
class Purged:
    """Rows one step deleted."""

    attempts: int
    schedules: int
    deliveries: int
    proposals: int = 0
    agent_keys: int = 0


def step(db: Database, cutoff: int, rows: int, agents_cutoff: int | None = None) -> list[Statement]:
    """One step's statements: what ended before `cutoff` (what agents made: before
    `agents_cutoff`, `cutoff` when not given), up to `rows` of each kind."""
    agents = cutoff if agents_cutoff is None else agents_cutoff
    return [
        db.prepare(EXPIRED_ATTEMPTS_SQL).bind(cutoff, rows),
        db.prepare(EXPIRED_PROPOSALS_SQL).bind(cutoff, rows),
        db.prepare(EXPIRED_SCHEDULES_SQL).bind(cutoff, rows),
        db.prepare(EXPIRED_DELIVERIES_SQL).bind(cutoff, rows),
        db.prepare(ENDED_PROPOSALS_SQL).bind(agents, rows),
        db.prepare(ENDED_KEYS_SQL).bind(agents, rows),
    ]


def purged(results: list[Result]) -> Purged:
    """What one step deleted: the schedules by what they returned (D1 counts the releases
    their trigger deleted in `changes` too)."""
    attempts, confirmed, schedules, deliveries, ended, keys = results
    return Purged(
        attempts.meta.changes,
        len(schedules.results),
        deliveries.meta.changes,
        confirmed.meta.changes + ended.meta.changes,
        keys.meta.changes,
    )
