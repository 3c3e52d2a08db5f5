"""Schedules as the management pages see them: create (superseding), list by pages, cancel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from scheduling.domain.schedule import Attempt, NewSchedule, Schedule
from scheduling.domain.statuses import ENDED, LIVE, WAITING, Status, sql_list
from scheduling.ports import Database, DatabaseError, Row, Statement

# A page of a listing: the content page and the manage view show this many cards.
PAGE_SIZE = 50
# Besides its live schedules, a content page keeps this many of the latest ended ones in
# view (completed, refused, cancelled); the rest, and every replaced one, is its history.
FEW_ENDED = 3


@dataclass(frozen=True)
class SchedulePage:
    """A page of a listing's schedules, with the counts its filters show."""

    schedules: tuple[Schedule, ...]  # at most PAGE_SIZE
    has_next: bool
    counts: dict[str, int]  # status -> rows in the listing's scope, whatever the filter
    live: tuple[Schedule, ...] = ()  # a content's live schedules, whichever page is shown
    settled: int = 0  # of the refused ones, those settled (when the listing counts them)
    stale: int = 0  # of the pending ones, those that need a new pin (`Schedule.needs_repin`)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def in_view(self) -> int:
        """How many of a content's schedules lead its listing: the live ones and the latest
        few ended ones (`list_for` orders them first)."""
        live = sum(self.counts.get(status, 0) for status in LIVE)
        return live + min(FEW_ENDED, sum(self.counts.get(status, 0) for status in ENDED))


class RunningConflict(Exception):
    """A schedule for this content and kind is being sent right now."""


_SUPERSEDE = (
    "UPDATE schedules SET status = ?5, next_attempt_at = NULL, updated_at = ?1"
    " WHERE installation_id = ?2 AND content_id = ?3 AND kind = ?4 AND status IN (?6, ?7)"
)
# The revision is the content and kind's counter plus one (`schedule_revisions`, which the
# retention purge never touches), counted in the same batch as the insert: a refused insert
# rolls the count back. The revision and the idempotency key are computed inside the insert,
# so two racing creates cannot both take the same revision: the unique indexes refuse one.
# A content and kind with no counter yet starts after the schedules kept, if any.
_COUNT_REVISION = """
INSERT INTO schedule_revisions (installation_id, content_id, kind, last_revision)
SELECT ?1, ?2, ?3, COALESCE(MAX(revision), 0) + 1 FROM schedules
 WHERE installation_id = ?1 AND content_id = ?2 AND kind = ?3
ON CONFLICT (installation_id, content_id, kind) DO UPDATE SET last_revision = last_revision + 1
"""
_INSERT = """
INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
    workflow_revision, revision, idempotency_key, due_at, timezone, local_time, fold, status,
    attempt_count, next_attempt_at, requested_by, requested_by_name, created_at, updated_at,
    title_sealed)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, r.next, 'sched:' || ?2 || ':' || ?1 || ':r' || r.next,
       ?8, ?9, ?10, ?11, ?15, 0, ?8, ?12, ?13, ?14, ?14, ?16
  FROM (SELECT last_revision AS next FROM schedule_revisions
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
        superseded, _, _ = await db.batch(
            [
                db.prepare(_SUPERSEDE).bind(
                    now, new.installation_id, new.content_id, new.kind, Status.SUPERSEDED, *WAITING
                ),
                db.prepare(_COUNT_REVISION).bind(new.installation_id, new.content_id, new.kind),
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
                    new.title_sealed,
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


# A later schedule of the same installation, content and kind (a higher revision) that was
# done: it settles a refused one. Reads the unique index on (installation, content, kind,
# revision). SQL text over an unaliased outer `schedules`.
_LATER_DONE = (
    "FROM schedules later WHERE later.installation_id = schedules.installation_id"
    " AND later.content_id = schedules.content_id AND later.kind = schedules.kind"
    f" AND later.revision > schedules.revision AND later.status = '{Status.COMPLETED}'"
)
# A refused schedule that no longer needs attention (`Schedule.settled`), as SQL.
SETTLED_SQL = f"(dismissed_at IS NOT NULL OR EXISTS (SELECT 1 {_LATER_DONE}))"
# A waiting schedule whose pin the other kind's completion put out of date
# (`Schedule.needs_repin`), as SQL: it needs attention before its time.
NEEDS_REPIN_SQL = f"(status = '{Status.PENDING}' AND made_stale_by IS NOT NULL)"

SCHEDULE_COLUMNS = (
    "id, installation_id, content_id, kind, to_state, version_id, workflow_revision, revision,"
    " idempotency_key, due_at, timezone, local_time, fold, status, result_code, attempt_count,"
    " next_attempt_at, requested_by, requested_by_name, created_at, updated_at, cancelled_by_name,"
    " cancelled_at, ended_by, dismissed_by_name, dismissed_at, made_stale_by, made_stale_at,"
    f" CASE WHEN status = '{Status.REFUSED}' THEN (SELECT later.id {_LATER_DONE}"
    " ORDER BY later.revision LIMIT 1) END AS resolved_by"
)
ATTEMPT_COLUMNS = "schedule_id, attempt, started_at, finished_at, code, http_status"


_CONTENT_SCOPE = "installation_id = ?1 AND content_id = ?2"
# The live schedules and the latest few ended ones first, then the history; newest first in
# each. Built from the code's constants, never from request text.
_IN_VIEW = (
    f"CASE WHEN status IN {sql_list(LIVE)} THEN 0"
    f" WHEN id IN (SELECT id FROM schedules WHERE {_CONTENT_SCOPE}"
    f" AND status IN {sql_list(ENDED)} ORDER BY updated_at DESC, rowid DESC LIMIT {FEW_ENDED})"
    " THEN 0 ELSE 1 END"
)


async def list_for(
    db: Database, installation_id: str, content_id: str, page_number: int
) -> SchedulePage:
    """Page `page_number` (from 1) of one content's schedules: the live ones and the latest
    few ended ones first (`SchedulePage.in_view` of them), then the history, each newest
    first; and its live schedules, whichever page this is."""
    live = db.prepare(
        f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE {_CONTENT_SCOPE}"
        f" AND status IN {sql_list(LIVE)} ORDER BY created_at DESC"
    ).bind(installation_id, content_id)
    return await listing(
        db,
        _CONTENT_SCOPE,
        (installation_id, content_id),
        order=f"{_IN_VIEW}, created_at DESC, rowid DESC",
        page_number=page_number,
        live=live,
    )


async def listing(
    db: Database,
    scope: str,
    params: tuple[str, ...],
    *,
    order: str,
    page_number: int,
    narrowed_to: str = "",
    narrowed_by: tuple[str, ...] = (),
    live: Statement | None = None,
    count_settled: bool = False,
) -> SchedulePage:
    """One page of the schedules in `scope` (SQL over `params`, optionally `narrowed_to` more,
    over `narrowed_by`, numbered after `params` and the offset), with their attempts and the
    counts by status of the whole scope: one round trip.

    `scope`, `narrowed_to` and `order` are SQL text built from the code's constants, never
    from request text; every value is bound.
    """
    offset = f"?{len(params) + 1}"
    # One row more than a page says whether a next page exists.
    chosen = (
        f"FROM schedules WHERE {scope}{narrowed_to} ORDER BY {order}"
        f" LIMIT {PAGE_SIZE + 1} OFFSET {offset}"
    )
    bound = (*params, (page_number - 1) * PAGE_SIZE, *narrowed_by)
    settled = (
        f", sum(CASE WHEN status = '{Status.REFUSED}' AND {SETTLED_SQL} THEN 1 ELSE 0 END)"
        f" AS settled, sum(CASE WHEN {NEEDS_REPIN_SQL} THEN 1 ELSE 0 END) AS stale"
        if count_settled
        else ", 0 AS settled, 0 AS stale"
    )
    statements: Sequence[Statement] = [
        db.prepare(
            f"SELECT status, count(*) AS n{settled} FROM schedules WHERE {scope} GROUP BY status"
        ).bind(*params),
        db.prepare(f"SELECT {SCHEDULE_COLUMNS} {chosen}").bind(*bound),
        db.prepare(
            f"SELECT {ATTEMPT_COLUMNS} FROM schedule_attempts"
            f" WHERE schedule_id IN (SELECT id {chosen}) ORDER BY attempt"
        ).bind(*bound),
        *([live] if live is not None else []),
    ]
    counted, listed, attempts, *rest = await db.batch(statements)
    found = _with_attempts(listed.results, attempts.results)
    return SchedulePage(
        schedules=tuple(found[:PAGE_SIZE]),
        has_next=len(found) > PAGE_SIZE,
        counts={str(row["status"]): int(row["n"]) for row in counted.results},
        live=tuple(_schedule(row) for row in rest[0].results) if rest else (),
        settled=sum(int(row["settled"] or 0) for row in counted.results),
        stale=sum(int(row["stale"] or 0) for row in counted.results),
    )


_FIELDS = tuple(f.name for f in fields(Schedule) if f.name != "attempts")


def _schedule(row: Row) -> Schedule:
    values = {name: row[name] for name in _FIELDS}
    return Schedule(**{**values, "status": Status(values["status"])})


def _with_attempts(schedule_rows: list[Row], attempt_rows: list[Row]) -> list[Schedule]:
    """Schedules in row order, each with its attempts (rows of `ATTEMPT_COLUMNS`)."""
    attempts: dict[str, list[Attempt]] = {str(row["id"]): [] for row in schedule_rows}
    for row in attempt_rows:
        attempts[row["schedule_id"]].append(
            Attempt(
                row["attempt"],
                row["started_at"],
                row["finished_at"],
                row["code"],
                row["http_status"],
            )
        )
    return [
        replace(_schedule(row), attempts=tuple(attempts[str(row["id"])])) for row in schedule_rows
    ]


async def replaced_by(db: Database, made: Schedule) -> Schedule | None:
    """The schedule `made` replaced when it was created (the previous revision of its
    content and kind, superseded), or None."""
    row = (
        await db.prepare(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE installation_id = ? AND content_id = ?"
            " AND kind = ? AND revision = ? AND status = ?"
        )
        .bind(
            made.installation_id, made.content_id, made.kind, made.revision - 1, Status.SUPERSEDED
        )
        .first()
    )
    return _schedule(row) if row else None


async def get(db: Database, installation_id: str, schedule_id: str) -> Schedule | None:
    row = (
        await db.prepare(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = ? AND installation_id = ?"
        )
        .bind(schedule_id, installation_id)
        .first()
    )
    return _schedule(row) if row else None


async def dismiss(
    db: Database,
    installation_id: str,
    schedule_id: str,
    now: int,
    *,
    person_id: str,
    person_name: str,
) -> bool:
    """refused → dismissed by whom and when (it leaves Needs attention; nothing else of it
    changes). False when the row is not refused, was dismissed already, or is absent."""
    result = (
        await db.prepare(
            "UPDATE schedules SET dismissed_by = ?1, dismissed_by_name = ?2, dismissed_at = ?3"
            " WHERE id = ?4 AND installation_id = ?5 AND status = ?6 AND dismissed_at IS NULL"
        )
        .bind(person_id, person_name, now, schedule_id, installation_id, Status.REFUSED)
        .run()
    )
    return result.meta.changes == 1


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
