"""A burst at a round hour: N schedules due in the same minute, the cron-only model (no
SCHEDULE_CLOCK: the tick sends inline).

The core answers every transition after 200 ms. Ticks run at T, T+1 min, T+2 min, …
until nothing is live. Prints, for the CPython runtime and for the real Worker entry
under Pyodide (the harness, which holds a seventh connection back as workerd does):
how many were sent and how late (p50/p99/max from due_at to the request leaving),
how many within 2 minutes of due, ticks used, D1 statements per tick, and the
send rate as a ratio to the platform's limit (SEND_CONCURRENCY ÷ latency).
Asserts nothing. The burst over 100 installations with an alarm clock each is
bench/clock_bench.py's.

    python -m bench.burst_bench [--rows 1000 10000] [--latency 0.2] [--runtime cpython pyodide]

Run from the repo root with the venv's Python (it imports `tests` for the app's test wiring).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduling.domain.secrets import installation_token
from scheduling.ports import Result, Statement
from scheduling.repository.history import LAST_TICK_SQL
from scheduling.runtimes.cpython.adapters import CpythonCrypto, HttpxClient, SystemClock
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import TOKEN_KEY, base_env, make_app
from tests.support.loopback_core import loopback_core

MINUTE = 60_000
HOUR = 3_600_000
# The round hour two to three hours ahead of the real clock. A tick chosen ahead of the wall
# clock runs at exactly that instant; one chosen behind it would run now, as a late delivery.
T = (int(time.time() * 1000) // HOUR + 3) * HOUR
T_LOCAL = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(T // 1000))
INSTALLATIONS = 10
MANY_INSTALLATIONS = 100  # bench/clock_bench.py's burst
SEND_CONCURRENCY = 6
MAX_IN_FLIGHT = 6  # MAX_IN_FLIGHT_PER_INSTALLATION's default
MAX_TICKS = 40


@dataclass
class Burst:
    runtime: str
    rows: int
    latency_s: float
    ticks: list[dict[str, int]] = field(default_factory=list)
    tick_seconds: list[float] = field(default_factory=list)
    lateness_ms: list[int] = field(default_factory=list)  # first attempt of each schedule
    statuses: dict[str, int] = field(default_factory=dict)


def installation_rows(
    base_url: str, seal: Callable[[str, str], str], installations: int = INSTALLATIONS
) -> list[tuple[str, list[Any]]]:
    rows = []
    for i in range(installations):
        installation_id = f"ins_{i}"
        sealed = seal("dwp_" + "A" * 43, installation_token(installation_id))
        rows.append(
            (
                "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
                " token_rotated_at) VALUES (?, 'site', ?, ?, 0, 0)",
                [installation_id, base_url, sealed],
            )
        )
    return rows


def schedule_rows(
    count: int, installations: int = INSTALLATIONS, due: Callable[[int], int] = lambda i: T
) -> Iterable[tuple[str, list[Any]]]:
    """Multi-row inserts of pending publishes due at T (row i at `due(i)`), under D1's 100
    bound parameters."""
    per_row = 6
    per_statement = 100 // per_row
    for start in range(0, count, per_statement):
        chunk = range(start, min(count, start + per_statement))
        values = ", ".join(
            f"(?, ?, ?, 'publish', 'published', 'ver_1', 1, 1, ?, ?, 'UTC', '{T_LOCAL}',"
            " 'pending', ?, 'usr_editor', 'Ada', 0, 0)"
            for _ in chunk
        )
        params: list[Any] = []
        for i in chunk:
            installation = f"ins_{i % installations}"
            params += [
                f"sch_{i}",
                installation,
                f"cnt_{i}",
                f"sched:{installation}:sch_{i}:r1",
                due(i),
                due(i),
            ]
        yield (
            "INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,"
            " workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,"
            " next_attempt_at, requested_by, requested_by_name, created_at, updated_at)"
            f" VALUES {values}",
            params,
        )


LATENESS_SQL = (
    "SELECT a.started_at - s.due_at AS late FROM schedule_attempts a"
    " JOIN schedules s ON s.id = a.schedule_id WHERE a.attempt = 1"
)
STATUS_SQL = (
    "SELECT status || ':' || coalesce(result_code, '') AS k, count(*) AS n"
    " FROM schedules GROUP BY k"
)
LIVE_SQL = "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"


# -- CPython: the app on sqlite3 + httpx --------------------------------------------------------


async def run_cpython(rows: int, latency_s: float) -> Burst:
    burst = Burst("CPython", rows, latency_s)
    with loopback_core(latency_s) as core:
        db = SqliteDatabase(":memory:")
        apply_migrations(db.connection)
        crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        sealed = {}
        for i in range(INSTALLATIONS):
            context = installation_token(f"ins_{i}")
            sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
        statements = installation_rows(core.base_url, lambda _plain, context: sealed[context])
        statements += list(schedule_rows(rows))
        await db.batch([db.prepare(sql).bind(*params) for sql, params in statements])
        for k in range(MAX_TICKS):
            started = time.perf_counter()
            burst.ticks.append(await app.tick(T + k * MINUTE))
            burst.tick_seconds.append(time.perf_counter() - started)
            if (await db.prepare(LIVE_SQL).first() or {}).get("n") == 0:
                break
        burst.lateness_ms = [r["late"] for r in (await db.prepare(LATENESS_SQL).all()).results]
        burst.statuses = {r["k"]: r["n"] for r in (await db.prepare(STATUS_SQL).all()).results}
    return burst


# -- Pyodide: the real Worker entry, Miniflare's D1, six connections ------------------------------


def seed_pyodide(
    worker: Any,
    base_url: str,
    rows: int,
    installations: int,
    due: Callable[[int], int] = lambda i: T,
) -> None:
    worker.execute(
        ("DELETE FROM schedule_attempts", []),
        ("DELETE FROM schedules", []),
        ("DELETE FROM sessions", []),
        ("DELETE FROM installations", []),
        ("DELETE FROM tick_history", []),
    )
    for chunk in range(0, installations, 20):
        made = installation_rows(base_url, worker.seal, installations)[chunk : chunk + 20]
        worker.execute(*made)
    batch: list[tuple[str, list[Any]]] = []
    for statement in schedule_rows(rows, installations, due):
        batch.append(statement)
        if len(batch) == 50:
            worker.execute(*batch)
            batch = []
    if batch:
        worker.execute(*batch)


def run_pyodide(rows: int, latency_s: float) -> Burst:
    from tests.pyodide_harness.harness import shared_harness

    burst = Burst("Pyodide", rows, latency_s)
    worker = shared_harness()
    with (
        loopback_core(latency_s) as core,
        worker.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url),
    ):
        seed_pyodide(worker, core.base_url, rows, INSTALLATIONS)
        for k in range(MAX_TICKS):
            started = time.perf_counter()
            worker.scheduled(T + k * MINUTE)
            burst.tick_seconds.append(time.perf_counter() - started)
            [record] = worker.sql(LAST_TICK_SQL)
            burst.ticks.append(record)
            if worker.sql(LIVE_SQL)[0]["n"] == 0:
                break
        burst.lateness_ms = [r["late"] for r in worker.sql(LATENESS_SQL)]
        burst.statuses = {r["k"]: r["n"] for r in worker.sql(STATUS_SQL)}
    return burst


class TimedDatabase:
    """SqliteDatabase, noting the time its round trips take (D1's single writer, played here)."""

    def __init__(self, inner: SqliteDatabase) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.statements = 0

    def prepare(self, sql: str) -> Statement:
        return self.inner.prepare(sql)

    async def batch(self, statements: Any) -> list[Result]:
        started = time.perf_counter()
        try:
            return await self.inner.batch(statements)
        finally:
            self.seconds += time.perf_counter() - started
            self.statements += len(statements)


# -- figures -----------------------------------------------------------------------------------


def percentile(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0


def show(burst: Burst) -> None:
    sent = len(burst.lateness_ms)
    in_time = sum(1 for late in burst.lateness_ms if late <= 2 * MINUTE)
    busy = [(t, s) for t, s in zip(burst.ticks, burst.tick_seconds, strict=True) if t.get("sends")]
    sends = sum(t.get("sends", 0) for t, _ in busy)
    seconds = sum(s for _, s in busy)
    limit = SEND_CONCURRENCY / burst.latency_s
    statements = [t.get("d1_statements", 0) for t, _ in busy]
    print(
        f"  {burst.runtime:8} {burst.rows:>6,} due at T: sent {sent:,} "
        f"({in_time:,} within 2 min of due), ticks used {len(busy)}"
    )
    print(
        f"           lateness due→request: p50 {percentile(burst.lateness_ms, 0.5) / 1000:.1f} s, "
        f"p99 {percentile(burst.lateness_ms, 0.99) / 1000:.1f} s, "
        f"max {max(burst.lateness_ms, default=0) / 1000:.1f} s"
    )
    print(
        f"           D1 statements per busy tick: max {max(statements, default=0)}, "
        f"total {sum(statements):,} ({sum(statements) / max(1, sends):.2f} per send)"
    )
    rate = sends / seconds if seconds else 0.0
    print(
        f"           send rate {rate:.1f}/s in busy ticks = {rate / limit:.2f}x the limit "
        f"({SEND_CONCURRENCY} connections / {burst.latency_s * 1000:.0f} ms = {limit:.0f}/s)"
    )
    print(f"           end state: {dict(sorted(burst.statuses.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="*", default=[1000, 10_000])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runtime", nargs="+", default=["cpython", "pyodide"])
    args = parser.parse_args()
    print(
        f"Burst: N schedules due at one round hour over {INSTALLATIONS} installations, no "
        f"SCHEDULE_CLOCK (the tick sends inline), core answering in "
        f"{args.latency * 1000:.0f} ms; defaults MAX_ROWS_PER_BATCH=20, "
        f"SEND_CONCURRENCY={SEND_CONCURRENCY}, TICK_BUDGET_MS=45000, MAX_LATENESS_MS=900000; "
        f"load average before: {os.getloadavg()[0]:.2f}"
    )
    for rows in args.rows:
        if "cpython" in args.runtime:
            show(asyncio.run(run_cpython(rows, args.latency)))
        if "pyodide" in args.runtime:
            show(run_pyodide(rows, args.latency))


if __name__ == "__main__":
    main()
