"""The retention purge at scale (issue 26, item 3). Prints figures; asserts nothing.

A SQLite database holds 1,000,000 finished schedules that ended past the retention window
(each with an attempt, one in ten with a failed webhook delivery) and 200 live ones. Ticks
run back to back, a minute apart on the tick's clock (which runs in real time within a
tick, so the purge's own limit of time applies), until nothing is past the window;
each tick's D1 statements, round trips and duration are compared with its budgets, and each
purge step's time is taken (what D1's one writer spends at once). After every step the
runner's due-row query (LIMIT 20, the 200 live rows due) is timed on that database and on
an untouched copy of it, side by side, so the machine's load weighs on both alike.

    python -m bench.retention_bench [--rows 1000000]

Run from the repo root with the venv's Python.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduling.config import Configuration
from scheduling.ports import Result, Statement
from scheduling.repository.history import EXPIRED_ATTEMPTS_SQL
from scheduling.repository.leases import DUE_SQL
from scheduling.runner import tick
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import FakeClock, base_env, make_app

NOW = 1_782_900_000_000
DAY = 86_400_000
LIVE = 200
# The reader asks for due rows as of two days on, when every live row is due.
READ_AT = NOW + 2 * DAY


def build(path: Path, rows: int) -> None:
    """`rows` schedules that ended 401 to 800 days ago over 50 installations, an attempt
    each, one in ten with a failed delivery; and `LIVE` pending ones due tomorrow."""
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executemany(
        "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
        " token_rotated_at) VALUES (?, 's', 'https://cms.example', 'x', 0, 0)",
        [(f"ins_{i}",) for i in range(50)],
    )
    conn.execute(
        "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
        " created_at, secret_rotated_at) VALUES ('whe_0', 'ins_0', 'https://h.example', 'x', 0, 0)"
    )
    old = NOW - 401 * DAY
    conn.execute("BEGIN")
    conn.execute(
        f"""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
        INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
            workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,
            result_code, attempt_count, requested_by, requested_by_name, created_at,
            updated_at)
        SELECT 'sch_' || i, 'ins_' || (i % 50), 'cnt_' || i, 'publish', 'published', 'v', 1, 1,
               'k' || i, {old} - (i % 400) * {DAY}, 'UTC', 'x',
               CASE i % 10 WHEN 0 THEN 'refused' WHEN 1 THEN 'superseded'
                           WHEN 2 THEN 'cancelled' ELSE 'completed' END,
               'transition_applied', 1, 'usr', 'Ada', 0, {old} - (i % 400) * {DAY}
          FROM n
        """
    )
    conn.execute(
        "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at, code,"
        " http_status) SELECT id, 1, updated_at, updated_at, 'transition_applied', 200"
        " FROM schedules"
    )
    conn.execute(
        "INSERT INTO webhook_deliveries (id, endpoint_id, installation_id, schedule_id,"
        " event_type, payload, created_at, status, attempt_count, finished_at)"
        " SELECT 'msg_' || id, 'whe_0', 'ins_0', id, 'schedule.refused', '{}', updated_at,"
        " 'failed', 9, updated_at + 86400000 FROM schedules WHERE status = 'refused'"
    )
    conn.execute(
        f"""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {LIVE})
        INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
            workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,
            next_attempt_at, requested_by, requested_by_name, created_at, updated_at)
        SELECT 'live_' || i, 'ins_' || (i % 50), 'cnt_live_' || i, 'publish', 'published', 'v',
               1, 1, 'k_live_' || i, {NOW + DAY}, 'UTC', 'x', 'pending', {NOW + DAY}, 'usr',
               'Ada', {NOW}, {NOW}
          FROM n
        """
    )
    conn.execute("COMMIT")
    conn.close()


def counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    found = [
        int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for table in ("schedules", "schedule_attempts", "webhook_deliveries")
    ]
    return found[0], found[1], found[2]


class TimedDatabase(SqliteDatabase):
    """Times each purge step (the batch whose first statement deletes expired attempts), and
    times the due-row query side by side after it."""

    steps_ms: list[float]
    side_by_side: SideBySide

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        started = time.perf_counter()
        results = await super().batch(statements)
        if getattr(statements[0], "sql", "") == EXPIRED_ATTEMPTS_SQL:
            self.steps_ms.append((time.perf_counter() - started) * 1000)
            self.side_by_side.measure()
        return results


class BenchClock(FakeClock):
    """The tick's clock: real time from NOW on (so the purge's own time limit applies), less
    the time spent measuring the due-row query, plus the minutes each tick is moved on."""

    def __init__(self, now_ms: int) -> None:
        super().__init__(now_ms)
        self.started = time.perf_counter()
        self.measuring_s = 0.0

    def now_ms(self) -> int:
        real_s = time.perf_counter() - self.started - self.measuring_s
        return self.now + int(real_s * 1000)


class SideBySide:
    """The due-row query on the purging database and on an untouched copy, alternately."""

    def __init__(self, path: Path, control: Path) -> None:
        self.purging = sqlite3.connect(path)
        self.control = sqlite3.connect(control)
        self.samples: dict[str, list[float]] = {"purging": [], "control": []}
        self.clock: BenchClock | None = None  # whose time the measuring is not

    def measure(self, runs: int = 3) -> None:
        started = time.perf_counter()
        for _ in range(runs):
            for name, conn in (("purging", self.purging), ("control", self.control)):
                asked = time.perf_counter()
                found = conn.execute(DUE_SQL, (READ_AT, 20)).fetchall()
                self.samples[name].append((time.perf_counter() - asked) * 1000)
                assert len(found) == 20
        if self.clock is not None:
            self.clock.measuring_s += time.perf_counter() - started

    def close(self) -> None:
        self.purging.close()
        self.control.close()


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered):.3f} / {p99:.3f} / {ordered[-1]:.3f} ms"


async def purge_ticks(path: Path, side_by_side: SideBySide) -> list[dict[str, Any]]:
    db = TimedDatabase(path)
    db.steps_ms = []
    db.side_by_side = side_by_side
    clock = BenchClock(NOW)
    side_by_side.clock = clock
    app = make_app(db, clock)
    events: list[dict[str, Any]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            events.append(json.loads(record.getMessage()))

    logger = logging.getLogger("scheduling.events")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    ticks = []
    while True:
        before = len(events)
        steps_before = len(db.steps_ms)
        started, measured = time.perf_counter(), clock.measuring_s
        report = await app.tick(clock.now_ms())
        took_ms = (time.perf_counter() - started - (clock.measuring_s - measured)) * 1000
        purged = [e for e in events[before:] if e["event"] == "retention_purged"]
        ticks.append(
            {
                "report": report,
                "ms": took_ms,
                "purged": purged[0] if purged else None,
                "steps_ms": db.steps_ms[steps_before:],
            }
        )
        if not purged:
            break
        clock.advance(60_000)
    db.close()
    return ticks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    config = Configuration.from_mapping(base_env())
    with tempfile.TemporaryDirectory() as tmp:
        path, control = Path(tmp) / "retention.sqlite3", Path(tmp) / "control.sqlite3"
        started = time.perf_counter()
        build(path, args.rows)
        shutil.copyfile(path, control)
        conn = sqlite3.connect(path)
        schedules, attempts, deliveries = counts(conn)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(
            f"built in {time.perf_counter() - started:.0f} s: {schedules:,} schedules"
            f" ({args.rows:,} past the {config.retention_days}-day window, {LIVE} live),"
            f" {attempts:,} attempts, {deliveries:,} webhook deliveries"
        )
        side_by_side = SideBySide(path, control)
        side_by_side.measure(30)
        before = {name: list(samples) for name, samples in side_by_side.samples.items()}
        for samples in side_by_side.samples.values():
            samples.clear()
        started = time.perf_counter()
        ticks = asyncio.run(purge_ticks(path, side_by_side))
        purge_s = time.perf_counter() - started
        during = side_by_side.samples
        side_by_side.close()
        left = counts(conn)
        conn.close()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    purging = [t for t in ticks if t["purged"]]
    statements = max(t["report"]["d1_statements"] for t in ticks)
    trips = max(t["report"]["d1_round_trips"] for t in ticks)
    longest = max(t["ms"] for t in ticks)
    steps = [ms for t in ticks for ms in t["steps_ms"]]
    most = max(t["purged"]["schedules"] for t in purging)
    print(
        f"purge: {len(purging)} ticks purged ({len(ticks)} run, the last finding nothing), "
        f"{purge_s:.1f} s in all; left: {left[0]:,} schedules, {left[1]:,} attempts, "
        f"{left[2]:,} deliveries"
    )
    print(
        f"  schedules purged per tick, max: {most:,} (steps of {tick.STEP_ROWS},"
        f" at most {tick.MAX_STEPS} a tick)"
    )
    print(
        f"  D1 statements per tick, max: {statements} (budget {config.max_d1_queries_per_tick});"
        f" round trips per tick, max: {trips}"
    )
    print(f"  tick duration, max: {longest:.0f} ms (budget {config.tick_budget_ms:,} ms)")
    print(f"  a purge step (one D1 batch), p50 / p99 / max: {spread(steps)}")
    print(f"due-row query, LIMIT 20 of {LIVE} live rows due, p50 / p99 / max:")
    for label, measured in (("before the purge", before), ("after each step", during)):
        ratio = statistics.median(measured["purging"]) / statistics.median(measured["control"])
        print(
            f"  {label}: {spread(measured['purging'])};"
            f" untouched copy {spread(measured['control'])}; medians {ratio:.2f}x"
        )


if __name__ == "__main__":
    main()
