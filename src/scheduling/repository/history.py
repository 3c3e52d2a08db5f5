"""What the operator reads of the runner (the tick history, a row per invocation kept 7 days
and written with the running totals in one write), and the retention purge's steps. Every
read goes through a partial index, so its cost follows live rows and the day's activity;
statuses are literal text matching the indexes' `WHERE` word for word.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduling.domain.outcomes import Attempt
from scheduling.domain.times import BUCKET_COLUMNS
from scheduling.ports import Database, Result, Row, Statement

# -- the backlog -----------------------------------------------------------------------------------

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


# -- the tick history and the running totals -------------------------------------------------------

RETENTION_MS = 7 * 24 * 60 * 60_000
PRUNE_ROWS = 10
KINDS = ("tick", "alarm", "backstop")  # a cron tick; a clock's alarm; a request's tick
# The report's counts, one column each (runner/engine.py's fields), then the lateness buckets.
REPORT_COLUMNS: tuple[str, ...] = (
    "cron_delay_ms",
    "due",
    "claimed",
    "batches",
    "sends",
    "completed",
    "refused",
    "retrying",
    "refused_unsent",
    "refused_unsent_late",
    "lost_claim",
    "lost_lease",
    "lateness_p50_ms",
    "lateness_p99_ms",
    "lateness_max_ms",
    "d1_statements",
    "d1_round_trips",
    "limit_reached",
    "lateness_sum_ms",
    *BUCKET_COLUMNS,
    # Notifications, every channel kind (migration 0009; renamed by 0018).
    "delivery_events",
    "delivery_sends",
    "deliveries_delivered",
    "deliveries_retrying",
    "deliveries_failed",
    "delivery_lost_lease",
    "delivery_delay_max_ms",
    # An alarm clock per installation (migration 0013).
    "caught",
    "clocks_rearmed",
    "waited_ms",
)
INSERT_SQL = (
    "INSERT INTO tick_history (at, kind, error, duration_ms, backlog, "
    + ", ".join(REPORT_COLUMNS)
    + ") VALUES (?1, ?2, ?3, ?4, "
    + DUE_COUNT_SQL.replace("?1", "?5")
    + ", "
    + ", ".join(f"?{6 + i}" for i in range(len(REPORT_COLUMNS)))
    + ")"
)
# Each counter series the invocation moved, as a JSON object of name -> amount: one statement
# whatever the number of series, under D1's bound-parameter limit.
ADD_TOTALS_SQL = """INSERT INTO runner_totals (name, value)
SELECT key, value FROM json_each(?1) WHERE value > 0
ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"""
PRUNE_SQL = f"""DELETE FROM tick_history WHERE rowid IN (
    SELECT rowid FROM tick_history WHERE at < ?1 ORDER BY at LIMIT {PRUNE_ROWS})"""

# The last tick that ran to its end (a failed one does not say the runner is alive).
LAST_TICK_SQL = """SELECT * FROM tick_history
 WHERE kind = 'tick' AND error IS NULL ORDER BY at DESC LIMIT 1"""
# The cron's backstop: the latest tick of the cron or of a backstop that ran to its end.
LATEST_TICK_SQL = """SELECT max(
  coalesce((SELECT at FROM tick_history WHERE kind = 'tick' AND error IS NULL
             ORDER BY at DESC LIMIT 1), -1),
  coalesce((SELECT at FROM tick_history WHERE kind = 'backstop' AND error IS NULL
             ORDER BY at DESC LIMIT 1), -1)) AS at"""
# The newest migration this code knows (tests/test_schema_guard.py: the last file of
# `migrations/`). A database that lists a later one in wrangler's `d1_migrations` was migrated
# for newer code: this code does not run the runner on it (`runner/invocation.py`).
NEWEST_MIGRATION = "0022_editors.sql"
UNKNOWN_MIGRATIONS_SQL = "SELECT name FROM d1_migrations WHERE name > ?1 ORDER BY name"
# /healthz in one statement, reading only indexes: the last good tick's instant, whether any
# work is due, and how many migrations the database has that this code does not know.
HEALTH_SQL = f"""SELECT
  (SELECT at FROM tick_history WHERE kind = 'tick' AND error IS NULL
    ORDER BY at DESC LIMIT 1) AS last_at,
  {WORK_DUE_SQL} AS work_due,
  (SELECT count(*) FROM d1_migrations WHERE name > ?2) AS unknown_migrations"""
TOTALS_SQL = "SELECT name, value FROM runner_totals"
# A window of the history in slots of `?3` ms from `?1`: per slot the worst of each gauge
# and the sum of each count, so 10,080 ticks come back as a few hundred rows. A tick falls
# in the slot of the minute it stands for (its instant less its cron delay), so a late
# delivery does not look like a minute without a tick; an alarm, in the slot of the time
# its clock was set for. The cron's delay is the ticks' alone. D1 binds every number as a
# REAL, and a REAL divided is not a slot: the bounds are cast, so both databases divide whole.
SERIES_SQL = (
    """SELECT (at - cron_delay_ms - CAST(?1 AS INTEGER)) / CAST(?3 AS INTEGER) AS slot,
       count(*) AS invocations,
       sum(kind = 'tick') AS ticks, sum(error IS NOT NULL) AS failed,
       max(duration_ms) AS duration_ms,
       max(backlog) AS backlog,
       max(CASE WHEN kind = 'tick' THEN cron_delay_ms ELSE 0 END) AS cron_delay_ms,
       sum(kind = 'alarm') AS alarms, sum(kind = 'backstop') AS backstops,
       max(CASE WHEN kind = 'alarm' THEN lateness_max_ms ELSE 0 END) AS alarm_lateness_max_ms,
       sum(caught) AS caught, sum(clocks_rearmed) AS clocks_rearmed,
       max(lateness_p50_ms) AS lateness_p50_ms, max(lateness_max_ms) AS lateness_max_ms,
       sum(sends) AS sends, sum(completed) AS completed, sum(refused) AS refused,
       sum(retrying) AS retrying, sum(refused_unsent + refused_unsent_late) AS refused_unsent,
       sum(lateness_sum_ms) AS lateness_sum_ms, """
    + ", ".join(f"sum({column}) AS {column}" for column in BUCKET_COLUMNS)
    + """
  FROM tick_history WHERE at >= ?1 AND at < ?2
 GROUP BY slot ORDER BY slot"""
)


@dataclass(frozen=True)
class LastTick:
    """The latest tick: when, how long, and what it did."""

    at: int
    duration_ms: int
    report: dict[str, int]


@dataclass(frozen=True)
class Health:
    """Whether the runner ticks, and whether work is waiting."""

    last_at: int | None  # the last tick that ran to its end
    work_due: bool
    code_behind: bool = False  # the database has migrations this code does not know


def write_record(
    db: Database,
    *,
    at: int,
    kind: str,
    error: str | None,
    duration_ms: int,
    ended_at: int,
    counts: Mapping[str, int],
    totals: Mapping[str, int],
) -> list[Statement]:
    """The invocation's row (with the backlog left at `ended_at`), the totals it adds, and
    the pruning of rows older than the retention: `RECORD_STATEMENTS` statements, for one
    batch."""
    if kind not in KINDS:
        raise ValueError(f"an invocation is one of {KINDS}")
    return [
        db.prepare(INSERT_SQL).bind(
            at, kind, error, duration_ms, ended_at, *(int(counts[c]) for c in REPORT_COLUMNS)
        ),
        db.prepare(ADD_TOTALS_SQL).bind(
            json.dumps({name: int(n) for name, n in totals.items()}, separators=(",", ":"))
        ),
        db.prepare(PRUNE_SQL).bind(at - RETENTION_MS),
    ]


def read_last(db: Database) -> Statement:
    return db.prepare(LAST_TICK_SQL)


def last_from(rows: Sequence[Row]) -> LastTick | None:
    if not rows:
        return None
    row = rows[0]
    report = {name: int(row[name]) for name in REPORT_COLUMNS if row.get(name) is not None}
    return LastTick(int(row["at"]), int(row["duration_ms"]), report)


def read_health(db: Database, now: int) -> Statement:
    return db.prepare(HEALTH_SQL).bind(now, NEWEST_MIGRATION)


def health_from(rows: Sequence[Row]) -> Health:
    row = rows[0]
    last_at = row["last_at"]
    return Health(
        None if last_at is None else int(last_at),
        bool(row["work_due"]),
        bool(row["unknown_migrations"]),
    )


def read_latest_tick(db: Database) -> Statement:
    return db.prepare(LATEST_TICK_SQL)


def latest_tick_from(rows: Sequence[Row]) -> int | None:
    at = int(rows[0]["at"])
    return None if at < 0 else at


def read_unknown_migrations(db: Database) -> Statement:
    return db.prepare(UNKNOWN_MIGRATIONS_SQL).bind(NEWEST_MIGRATION)


def unknown_migrations_from(rows: Sequence[Row]) -> list[str]:
    return [str(row["name"]) for row in rows]


def read_totals(db: Database) -> Statement:
    return db.prepare(TOTALS_SQL)


def totals_from(rows: Sequence[Row]) -> dict[str, int]:
    return {str(row["name"]): int(row["value"]) for row in rows}


def read_series(db: Database, since: int, until: int, slot_ms: int) -> Statement:
    return db.prepare(SERIES_SQL).bind(since, until, slot_ms)


# -- what the operator page lists ------------------------------------------------------------------

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


# -- the retention purge's steps -------------------------------------------------------------------

# Must match `schedules_finished`'s WHERE word for word, so its statuses are literal text
# (tests/test_storage_cpython.py checks them against `outcomes.FINISHED`). Without an ORDER
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
