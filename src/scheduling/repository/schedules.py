"""Schedules as the pages see them: created (superseding the live one of their content and
kind), cancelled, listed by pages of fifty, and the manage view's agenda order (needs
attention, upcoming, finished, the replaced ones last), every schedule reachable by paging.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace

from scheduling.domain.outcomes import (
    ENDED,
    GROUPS,
    LIVE,
    SETTLED_GROUP,
    WAITING,
    Attempt,
    Status,
    sql_list,
)
from scheduling.domain.schedules import MAX_RELEASE_ITEMS, NewSchedule, Schedule
from scheduling.ports import Database, DatabaseError, Row, Statement

# -- create, list, cancel --------------------------------------------------------------------------

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


class ReleaseClosed(Exception):
    """The release an item was to join no longer waits, or holds its most items already."""


# The rows a create writes (one, or a release's worth: moved, resumed), as one JSON array
# (`?2`) of objects (`NewSchedule`'s fields), so a batch costs three statements whatever its
# size, and `?1` the instant.
_NEW = "new AS (SELECT {} FROM json_each(?2))".format(
    ", ".join(f"json_extract(value, '$.{f.name}') AS {f.name}" for f in fields(NewSchedule))
)
# Each new row replaces the waiting one of its content and kind (a queued release item too).
_SUPERSEDE = f"""WITH {_NEW}
UPDATE schedules SET status = 'superseded', next_attempt_at = NULL, updated_at = ?1
 WHERE status IN {sql_list(WAITING)}
   AND (installation_id, content_id, kind) IN (SELECT installation_id, content_id, kind FROM new)
RETURNING id"""
# The revision is the content and kind's counter plus one (`schedule_revisions`, which the
# retention purge never touches), counted in the same batch as the insert: a refused insert
# rolls the count back. The revision and the idempotency key are computed inside the insert,
# so two racing creates cannot both take the same revision: the unique indexes refuse one.
# A content and kind with no counter yet starts after the schedules kept, if any.
_COUNT_REVISION = f"""WITH {_NEW}
INSERT INTO schedule_revisions (installation_id, content_id, kind, last_revision)
SELECT installation_id, content_id, kind,
       coalesce((SELECT max(revision) FROM schedules s WHERE s.installation_id = new.installation_id
                    AND s.content_id = new.content_id AND s.kind = new.kind), 0) + 1
  FROM new WHERE true
ON CONFLICT (installation_id, content_id, kind) DO UPDATE SET last_revision = last_revision + 1"""
# A release's item joins it queued (its line's triggers make the first one due), at its place
# or at the end; into a release that no longer waits or is full (`?3` items) it gets no place,
# which the table refuses, and the whole batch rolls back.
_INSERT = f"""WITH {_NEW}
INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
    workflow_revision, revision, idempotency_key, due_at, timezone, local_time, fold, status,
    attempt_count, next_attempt_at, requested_by, requested_by_name, created_at, updated_at,
    title_sealed, release_id, release_position, replaces, replaced_as)
SELECT new.id, new.installation_id, new.content_id, new.kind, new.to_state, new.version_id,
       new.workflow_revision, r.last_revision,
       'sched:' || new.installation_id || ':' || new.id || ':r' || r.last_revision,
       new.due_at, new.timezone, new.local_time, new.fold,
       CASE WHEN new.release_id IS NULL THEN '{Status.PENDING}' ELSE '{Status.QUEUED}' END, 0,
       CASE WHEN new.release_id IS NULL THEN new.due_at END,
       new.requested_by, new.requested_by_name, ?1, ?1, new.title_sealed, new.release_id,
       CASE WHEN EXISTS (
           SELECT 1 FROM releases rel WHERE rel.id = new.release_id
              AND rel.installation_id = new.installation_id AND rel.status = 'waiting'
              AND (SELECT count(*) FROM schedules i WHERE i.release_id = rel.id
                      AND i.status IN {sql_list(LIVE)}) < ?3)
            THEN coalesce(new.release_position, (SELECT coalesce(max(release_position), 0) + 1
                                                   FROM schedules p
                                                  WHERE p.release_id = new.release_id))
       END,
       new.replaces, new.replaced_as
  FROM new JOIN schedule_revisions r ON r.installation_id = new.installation_id
   AND r.content_id = new.content_id AND r.kind = new.kind
RETURNING id"""


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
    """Supersede the live waiting schedule of `new`'s content and kind and insert `new`, in
    one batch; returns how many were superseded (0 or 1). See `create_all`."""
    return len(await create_all(db, [new], now))


async def create_all(
    db: Database,
    rows: Sequence[NewSchedule],
    now: int,
    *,
    first: Sequence[Statement] = (),
    max_items: int = MAX_RELEASE_ITEMS,
) -> list[str]:
    """Insert `rows`, each superseding the waiting schedule of its content and kind, after
    `first` (a release written or changed), all in one batch; returns the ids superseded.

    Raises RunningConflict when one of those is running (the one-live unique index refuses
    the insert), ReleaseClosed when an item's release is no longer waiting or already holds
    `max_items` live items: either way the batch rolls back and nothing changes.
    """
    listed = json.dumps([asdict(row) for row in rows], ensure_ascii=False)
    try:
        results = await db.batch(
            [
                *first,
                db.prepare(_SUPERSEDE).bind(now, listed),
                db.prepare(_COUNT_REVISION).bind(now, listed),
                db.prepare(_INSERT).bind(now, listed, max_items),
            ]
        )
    except DatabaseError as exc:
        if not exc.constraint:
            raise
        for row in rows:
            if await running_exists(db, row.installation_id, row.content_id, row.kind):
                raise RunningConflict from None
        if any(row.release_id for row in rows):
            raise ReleaseClosed from None
        raise
    return [str(found["id"]) for found in results[len(first)].results]


# A later schedule of the same installation, content and kind (a higher revision) that was
# done: it settles a refused one. Reads the unique index on (installation, content, kind,
# revision). SQL text over an unaliased outer `schedules`.
_LATER_DONE = (
    "FROM schedules later WHERE later.installation_id = schedules.installation_id"
    " AND later.content_id = schedules.content_id AND later.kind = schedules.kind"
    f" AND later.revision > schedules.revision AND later.status = '{Status.COMPLETED}'"
)
# Ended without the change: refused by Dee Wan or a cap, or held unsent.
_NOT_DONE = sql_list((Status.REFUSED, Status.HELD))
# A refused schedule that no longer needs attention (`Schedule.settled`), as SQL.
SETTLED_SQL = f"(dismissed_at IS NOT NULL OR EXISTS (SELECT 1 {_LATER_DONE}))"
# A waiting schedule whose pin the other kind's completion put out of date
# (`Schedule.needs_repin`), as SQL: it needs attention before its time.
NEEDS_REPIN_SQL = f"(status IN {sql_list(WAITING)} AND made_stale_by IS NOT NULL)"

SCHEDULE_COLUMNS = (
    "id, installation_id, content_id, kind, to_state, version_id, workflow_revision, revision,"
    " idempotency_key, due_at, timezone, local_time, fold, status, result_code, attempt_count,"
    " next_attempt_at, requested_by, requested_by_name, created_at, updated_at, cancelled_by_name,"
    " cancelled_at, ended_by, dismissed_by_name, dismissed_at, made_stale_by, made_stale_at,"
    " release_id, release_position, conflict, conflict_at, replaces, replaced_as,"
    f" CASE WHEN status IN {_NOT_DONE} THEN (SELECT later.id {_LATER_DONE}"
    " ORDER BY later.revision LIMIT 1) END AS resolved_by"
)
ATTEMPT_COLUMNS = "schedule_id, attempt AS number, started_at, finished_at, code, http_status"


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
        f", sum(CASE WHEN status IN {_NOT_DONE} AND {SETTLED_SQL} THEN 1 ELSE 0 END)"
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
        schedule_id = row.pop("schedule_id")
        attempts[schedule_id].append(Attempt(**row))
    return [
        replace(_schedule(row), attempts=tuple(attempts[str(row["id"])])) for row in schedule_rows
    ]


async def _one(db: Database, where: str, *params: object) -> Schedule | None:
    found = db.prepare(f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE {where}")
    row = await found.bind(*params).first()
    return _schedule(row) if row else None


async def replaced_by(db: Database, made: Schedule) -> Schedule | None:
    """The schedule `made` replaced when it was created (the previous revision of its
    content and kind, superseded), or None."""
    where = "installation_id = ? AND content_id = ? AND kind = ? AND revision = ? AND status = ?"
    key = (made.installation_id, made.content_id, made.kind, made.revision - 1)
    return await _one(db, where, *key, Status.SUPERSEDED)


async def get(db: Database, installation_id: str, schedule_id: str) -> Schedule | None:
    return await _one(db, "id = ? AND installation_id = ?", schedule_id, installation_id)


async def dismiss(
    db: Database,
    installation_id: str,
    schedule_id: str,
    now: int,
    *,
    person_id: str,
    person_name: str,
) -> bool:
    """refused or held → dismissed by whom and when (it leaves Needs attention; nothing else of it
    changes). False when the row is not refused, was dismissed already, or is absent."""
    result = (
        await db.prepare(
            "UPDATE schedules SET dismissed_by = ?1, dismissed_by_name = ?2, dismissed_at = ?3"
            f" WHERE id = ?4 AND installation_id = ?5 AND status IN {_NOT_DONE}"
            " AND dismissed_at IS NULL"
        )
        .bind(person_id, person_name, now, schedule_id, installation_id)
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
    """waiting (a release's queued item too) → cancelled, by whom and when. False when the row
    is in any other state (or absent)."""
    result = (
        await db.prepare(
            "UPDATE schedules SET status = ?6, next_attempt_at = NULL, updated_at = ?1,"
            " cancelled_by = ?2, cancelled_by_name = ?3, cancelled_at = ?1"
            f" WHERE id = ?4 AND installation_id = ?5 AND status IN {sql_list(WAITING)}"
            " RETURNING id"  # what the statement changed, not what its release's triggers did
        )
        .bind(now, person_id, person_name, schedule_id, installation_id, Status.CANCELLED)
        .all()
    )
    return len(result.results) == 1


# -- the manage view's order -----------------------------------------------------------------------

_NEEDS_ATTENTION = f"((status IN {_NOT_DONE} AND NOT {SETTLED_SQL}) OR {NEEDS_REPIN_SQL})"
_RANK = (
    f"CASE WHEN status = '{Status.RETRYING}' THEN 0 WHEN {_NEEDS_ATTENTION} THEN 1"
    f" WHEN status IN {sql_list((Status.PENDING, Status.QUEUED, Status.RUNNING))} THEN 2"
    f" WHEN status = '{Status.SUPERSEDED}' THEN 4 ELSE 3 END"
)
_BY_DUE_TIME = sql_list((Status.RETRYING, Status.PENDING, Status.QUEUED, Status.RUNNING))
_ORDER = f"{_RANK}, CASE WHEN status IN {_BY_DUE_TIME} THEN due_at ELSE -updated_at END, id"


def _group_sql(group: str) -> str:
    """The rows of one group: its statuses, a refused or held one by whether it is settled."""
    others = sql_list(s for s in GROUPS[group] if s not in (Status.REFUSED, Status.HELD))
    if Status.REFUSED in GROUPS[group]:
        return f"(status IN {others} OR {_NEEDS_ATTENTION})"
    if group == SETTLED_GROUP:
        return f"(status IN {others} OR (status IN {_NOT_DONE} AND {SETTLED_SQL}))"
    if Status.PENDING in GROUPS[group]:
        return f"(status IN {others} AND NOT {NEEDS_REPIN_SQL})"
    return f"status IN {others}"


async def manage_page(
    db: Database,
    installation_id: str,
    group: str | None,
    page_number: int,
    *,
    only: str | None = None,
) -> SchedulePage:
    """Page `page_number` (from 1) of `group` (None: every status), or the one schedule
    `only`, with its attempts and the counts (a group's count is `group_count`).

    One round trip. The statuses are the code's own constants, never request text.
    """
    narrowed = "" if group is None else f" AND {_group_sql(group)}"
    if only is not None:
        narrowed += " AND id = ?3"
    return await listing(
        db,
        "installation_id = ?1",
        (installation_id,),
        order=_ORDER,
        page_number=page_number,
        narrowed_to=narrowed,
        narrowed_by=() if only is None else (only,),
        count_settled=True,
    )


def group_count(page: SchedulePage, group: str | None) -> int:
    """How many schedules of the installation are in `group` (None: all of them)."""
    if group is None:
        return page.total
    count = sum(page.counts.get(status, 0) for status in GROUPS[group])
    if Status.REFUSED in GROUPS[group]:
        return count - page.settled + page.stale
    if Status.PENDING in GROUPS[group]:
        return count - page.stale
    return count + (page.settled if group == SETTLED_GROUP else 0)
