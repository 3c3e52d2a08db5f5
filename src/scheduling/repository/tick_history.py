"""The tick history: one row per tick (and per alarm of an installation's clock, and per tick a
request ran as the cron's backstop), kept 7 days, and the running totals behind the operator's
counters; and whether the database is newer than this code.

An invocation's row, the totals it adds to and the pruning of rows past the retention go
in one write (`write`, three statements) that the invocation sends as its last round
trip, so recording costs no extra round trip and the totals can never disagree with the
history that counted the same work. Pruning removes at most `PRUNE_ROWS` of the oldest
rows per write, read from the index on `at`: an invocation adds one row and takes up to
ten away, so the table stays at 7 days of rows and each write stays small.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduling.domain.lateness import BUCKET_COLUMNS
from scheduling.ports import Database, Row, Statement
from scheduling.repository.backlog import DUE_COUNT_SQL, WORK_DUE_SQL

RETENTION_MS = 7 * 24 * 60 * 60_000
PRUNE_ROWS = 10
KINDS = ("tick", "alarm", "backstop")  # a cron tick; a clock's alarm; a request's tick
# The report's counts, one column each (runner/report.py's fields), then the lateness buckets.
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


def write(
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
