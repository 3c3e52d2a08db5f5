"""What the operator page lists beside the charts: the schedules that will try again (their
Dee Wan failing), the latest refusals across installations, and the installations that need
a look. Each reads partial indexes only, so its cost
follows live rows and the day's activity, never the table's history.

The statuses are literal text matching the indexes' `WHERE` word for word (a refused row
is also written as one of the finished statuses, as `schedules_finished` says), as in
`backlog.py`. The refusals are read `INDEXED BY schedules_finished`: with statistics
(ANALYZE), the planner would rather scan `schedules_by_installation` whole to group by
installation, and a statement that can no longer use the index fails instead of scanning.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.schedule import Attempt
from scheduling.ports import Database, Row, Statement

RECENT_REFUSALS = 50
INSTALLATIONS_SHOWN = 100
RETRYING_SHOWN = 50

# Each with its last try (`a`), for the card's own sentence.
_LAST_TRY = """
  LEFT JOIN schedule_attempts a ON a.schedule_id = s.id AND a.attempt = s.attempt_count"""
_TRY_COLUMNS = "a.attempt, a.started_at, a.finished_at, a.code, a.http_status"

RECENT_REFUSALS_SQL = f"""SELECT s.id, s.installation_id, s.content_id, s.kind, s.version_id,
       s.result_code, s.ended_by, s.attempt_count, s.updated_at, {_TRY_COLUMNS}
  FROM schedules s INDEXED BY schedules_finished{_LAST_TRY}
 WHERE s.status IN ('completed', 'refused', 'cancelled', 'superseded', 'held')
   AND s.status = 'refused'
 ORDER BY s.updated_at DESC LIMIT {RECENT_REFUSALS}"""

# Schedules that will try again, their Dee Wan having failed their last try: with that try,
# and their first (when their Dee Wan began failing them), by installation, next try first.
RETRYING_SQL = f"""SELECT s.id, s.installation_id, i.site_id, s.content_id, s.kind,
       s.version_id, s.due_at, s.attempt_count, s.next_attempt_at, s.result_code, {_TRY_COLUMNS},
       (SELECT min(f.started_at) FROM schedule_attempts f WHERE f.schedule_id = s.id) AS first_try
  FROM schedules s INDEXED BY schedules_waiting
  JOIN installations i ON i.id = s.installation_id{_LAST_TRY}
 WHERE s.status IN ('pending', 'retrying') AND s.status = 'retrying'
 ORDER BY s.installation_id, s.next_attempt_at, s.id LIMIT {RETRYING_SHOWN}"""

# Installations with live schedules, with refusals since ?1, or among the ones that sent
# last; those with the most refusals first.
INSTALLATIONS_SQL = f"""WITH live AS (
    SELECT installation_id, count(*) AS n FROM schedules
     WHERE status IN ('pending', 'retrying', 'queued', 'running') GROUP BY installation_id),
refused AS (
    SELECT installation_id, count(*) AS n FROM schedules INDEXED BY schedules_finished
     WHERE status IN ('completed', 'refused', 'cancelled', 'superseded', 'held') AND status = 'refused'
       AND updated_at >= ?1 GROUP BY installation_id),
recent AS (
    SELECT id FROM installations ORDER BY last_sent_at DESC LIMIT {INSTALLATIONS_SHOWN}),
chosen AS (
    SELECT installation_id AS id FROM live
    UNION SELECT installation_id FROM refused
    UNION SELECT id FROM recent)
SELECT i.id, i.site_id, i.last_sent_at,
       coalesce(live.n, 0) AS live, coalesce(refused.n, 0) AS refused
  FROM chosen JOIN installations i ON i.id = chosen.id
  LEFT JOIN live ON live.installation_id = i.id
  LEFT JOIN refused ON refused.installation_id = i.id
 ORDER BY refused DESC, live DESC, i.last_sent_at DESC, i.id
 LIMIT {INSTALLATIONS_SHOWN}"""


@dataclass(frozen=True)
class RecentRefusal:
    schedule_id: str
    installation_id: str
    content_id: str
    kind: str
    version_id: str
    code: str
    ended_by: str | None  # which cap ended a `retry_exhausted` one
    attempts: int
    at: int  # when it was refused
    last: Attempt | None = None  # its last try


@dataclass(frozen=True)
class Retrying:
    """A schedule that will try again: its last try, and when its first was."""

    schedule_id: str
    installation_id: str
    site_id: str
    content_id: str
    kind: str
    version_id: str
    due_at: int
    attempts: int
    next_attempt_at: int
    result_code: str | None
    last: Attempt | None
    first_try: int | None


@dataclass(frozen=True)
class InstallationLine:
    id: str
    site_id: str
    live: int
    refused_recently: int
    last_sent_at: int | None


def read_recent_refusals(db: Database) -> Statement:
    return db.prepare(RECENT_REFUSALS_SQL)


def refusals_from(rows: list[Row]) -> tuple[RecentRefusal, ...]:
    return tuple(
        RecentRefusal(
            str(r["id"]),
            str(r["installation_id"]),
            str(r["content_id"]),
            str(r["kind"]),
            str(r["version_id"]),
            str(r["result_code"] or ""),
            None if r["ended_by"] is None else str(r["ended_by"]),
            int(r["attempt_count"]),
            int(r["updated_at"]),
            _last_try(r),
        )
        for r in rows
    )


def read_retrying(db: Database) -> Statement:
    return db.prepare(RETRYING_SQL)


def retrying_from(rows: list[Row]) -> tuple[Retrying, ...]:
    return tuple(
        Retrying(
            str(r["id"]),
            str(r["installation_id"]),
            str(r["site_id"]),
            str(r["content_id"]),
            str(r["kind"]),
            str(r["version_id"]),
            int(r["due_at"]),
            int(r["attempt_count"]),
            int(r["next_attempt_at"]),
            r["result_code"],
            _last_try(r),
            r["first_try"],
        )
        for r in rows
    )


def _last_try(row: Row) -> Attempt | None:
    if row["attempt"] is None:
        return None
    return Attempt(
        row["attempt"], row["started_at"], row["finished_at"], row["code"], row["http_status"]
    )


def read_installations(db: Database, refused_since: int) -> Statement:
    return db.prepare(INSTALLATIONS_SQL).bind(refused_since)


def installations_from(rows: list[Row]) -> tuple[InstallationLine, ...]:
    return tuple(
        InstallationLine(
            str(r["id"]),
            str(r["site_id"]),
            int(r["live"]),
            int(r["refused"]),
            None if r["last_sent_at"] is None else int(r["last_sent_at"]),
        )
        for r in rows
    )
