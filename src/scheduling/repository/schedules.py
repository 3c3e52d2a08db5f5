"""Schedules as the management pages see them: create (superseding), list, cancel."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduling.domain.statuses import WAITING, Status
from scheduling.ports import Database, DatabaseError, Row

LIST_LIMIT = 200


@dataclass(frozen=True)
class NewSchedule:
    id: str
    installation_id: str
    content_id: str  # primary id
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    requested_by: str
    requested_by_name: str


@dataclass(frozen=True)
class Attempt:
    attempt: int
    started_at: int
    finished_at: int | None
    code: str | None
    http_status: int | None


@dataclass
class Schedule:
    id: str
    installation_id: str
    content_id: str
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    revision: int
    idempotency_key: str
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    status: Status
    result_code: str | None
    attempt_count: int
    next_attempt_at: int | None
    requested_by: str
    requested_by_name: str
    created_at: int
    updated_at: int
    cancelled_by_name: str | None = None
    cancelled_at: int | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Row) -> Schedule:
        names = [n for n in cls.__dataclass_fields__ if n != "attempts"]
        values = {name: row[name] for name in names}
        return cls(**{**values, "status": Status(values["status"])})


class RunningConflict(Exception):
    """A schedule for this content and kind is being sent right now."""


_SUPERSEDE = (
    "UPDATE schedules SET status = ?5, next_attempt_at = NULL, updated_at = ?1"
    " WHERE installation_id = ?2 AND content_id = ?3 AND kind = ?4 AND status IN (?6, ?7)"
)
# The revision and the idempotency key are computed inside the insert, so two
# racing creates cannot both take the same revision: the unique indexes refuse one.
_INSERT = """
INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
    workflow_revision, revision, idempotency_key, due_at, timezone, local_time, fold, status,
    attempt_count, next_attempt_at, requested_by, requested_by_name, created_at, updated_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, r.next, 'sched:' || ?2 || ':' || ?1 || ':r' || r.next,
       ?8, ?9, ?10, ?11, ?15, 0, ?8, ?12, ?13, ?14, ?14
  FROM (SELECT COALESCE(MAX(revision), 0) + 1 AS next FROM schedules
         WHERE installation_id = ?2 AND content_id = ?3 AND kind = ?4) AS r
"""


async def running_exists(db: Database, installation_id: str, content_id: str, kind: str) -> bool:
    row = (
        await db.prepare(
            "SELECT 1 AS running FROM schedules WHERE installation_id = ? AND content_id = ?"
            " AND kind = ? AND status = ?"
        )
        .bind(installation_id, content_id, kind, Status.RUNNING)
        .first()
    )
    return row is not None


async def create(db: Database, new: NewSchedule, now: int) -> int:
    """Supersede the live pending/retrying schedule and insert `new`, in one batch.

    Returns how many were superseded (0 or 1). Raises RunningConflict when one
    is running: the one-live unique index refuses the insert and the batch rolls back.
    """
    try:
        superseded, _ = await db.batch(
            [
                db.prepare(_SUPERSEDE).bind(
                    now, new.installation_id, new.content_id, new.kind, Status.SUPERSEDED, *WAITING
                ),
                db.prepare(_INSERT).bind(
                    new.id,
                    new.installation_id,
                    new.content_id,
                    new.kind,
                    new.to_state,
                    new.version_id,
                    new.workflow_revision,
                    new.due_at,
                    new.timezone,
                    new.local_time,
                    new.fold,
                    new.requested_by,
                    new.requested_by_name,
                    now,
                    Status.PENDING,
                ),
            ]
        )
    except DatabaseError as exc:
        if exc.constraint and await running_exists(
            db, new.installation_id, new.content_id, new.kind
        ):
            raise RunningConflict from None
        raise
    return superseded.meta.changes


SCHEDULE_COLUMNS = (
    "id, installation_id, content_id, kind, to_state, version_id, workflow_revision, revision,"
    " idempotency_key, due_at, timezone, local_time, fold, status, result_code, attempt_count,"
    " next_attempt_at, requested_by, requested_by_name, created_at, updated_at, cancelled_by_name,"
    " cancelled_at"
)
ATTEMPT_COLUMNS = "schedule_id, attempt, started_at, finished_at, code, http_status"


async def list_for(
    db: Database, installation_id: str, content_id: str | None = None
) -> list[Schedule]:
    """Newest first, with their attempts; one round trip."""
    where = "installation_id = ?1" + (" AND content_id = ?2" if content_id else "")
    params = (installation_id, content_id) if content_id else (installation_id,)
    chosen = f"SELECT id FROM schedules WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT {LIST_LIMIT}"
    schedules_result, attempts_result = await db.batch(
        [
            db.prepare(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE {where}"
                f" ORDER BY created_at DESC, rowid DESC LIMIT {LIST_LIMIT}"
            ).bind(*params),
            db.prepare(
                f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
                f" WHERE schedule_id IN ({chosen}) ORDER BY attempt"
            ).bind(*params),
        ]
    )
    return with_attempts(schedules_result.results, attempts_result.results)


def with_attempts(schedule_rows: list[Row], attempt_rows: list[Row]) -> list[Schedule]:
    """Schedules in row order, each with its attempts (rows of `ATTEMPT_COLUMNS`)."""
    schedules = [Schedule.from_row(row) for row in schedule_rows]
    by_id = {s.id: s for s in schedules}
    for row in attempt_rows:
        by_id[row["schedule_id"]].attempts.append(
            Attempt(
                row["attempt"],
                row["started_at"],
                row["finished_at"],
                row["code"],
                row["http_status"],
            )
        )
    return schedules


async def get(db: Database, installation_id: str, schedule_id: str) -> Schedule | None:
    row = (
        await db.prepare(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = ? AND installation_id = ?"
        )
        .bind(schedule_id, installation_id)
        .first()
    )
    return Schedule.from_row(row) if row else None


async def cancel(
    db: Database,
    installation_id: str,
    schedule_id: str,
    now: int,
    *,
    person_id: str,
    person_name: str,
) -> bool:
    """pending/retrying → cancelled, by whom and when. False when the row is in any other state (or absent)."""
    result = (
        await db.prepare(
            "UPDATE schedules SET status = ?6, next_attempt_at = NULL, updated_at = ?1,"
            " cancelled_by = ?2, cancelled_by_name = ?3, cancelled_at = ?1"
            " WHERE id = ?4 AND installation_id = ?5 AND status IN (?7, ?8)"
        )
        .bind(now, person_id, person_name, schedule_id, installation_id, Status.CANCELLED, *WAITING)
        .run()
    )
    return result.meta.changes == 1
