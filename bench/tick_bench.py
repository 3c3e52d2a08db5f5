"""Runner benchmarks, measured side by side in one run. Prints figures; asserts nothing.

1. A tick of 20 due rows against a real fake_core server on loopback that
   answers every transition after 200 ms, as a ratio to a tick of one row.
2. D1 round trips that tick costs (and a 1-row tick, to show it does not grow).
3. The due-row query at 10,000 and 1,000,000 schedule rows, with its query
   plan, next to the same query with the runner's partial indexes dropped.
4. `GET /admin/status`'s queries (due backlog, counts by status) on the same
   tables, next to the same queries without `schedules_finished`.
5. The operator's routes through the app (`GET /healthz`, `/admin/metrics`, `/admin`) and
   the tick's record (its history row, totals and pruning) over 1 and 7 days of tick history
   (1,440 and 10,080 ticks) and 10,000 or 1,000,000 schedule rows, next to the same
   with the history's indexes dropped, and the query plans of the history reads.

    python -m bench.tick_bench [--big 1000000] [--latency 0.2]

Run from the repo root with the venv's Python (it imports `tests` for the app's test wiring).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import uvicorn

from scheduling.app import App
from scheduling.domain.schedules import NewSchedule
from scheduling.http.requests import Headers, Request
from scheduling.repository import schedules
from scheduling.repository.history import (
    BACKLOG_SQL,
    COUNTS_SQL,
    HEALTH_SQL,
    PRUNE_SQL,
    REPORT_COLUMNS,
    SERIES_SQL,
)
from scheduling.repository.leases import DUE_SQL
from scheduling.runner import invocation
from scheduling.runner.engine import TickReport
from scheduling.runtimes.cpython.adapters import HttpxClient
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.activation import mint
from tests.support.app import ADMIN_SECRET, FakeClock, base_env, make_app

NOW = 1_782_900_000_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1 and 2: tick wall time and round trips --------------------------------------------------


async def tick_figures(latency_s: float, rows: int) -> tuple[float, int, int]:
    """(wall seconds, D1 round trips, D1 statements) of one tick with `rows` due rows."""
    port = free_port()
    core_url = f"http://localhost:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fake_core",
            "--port",
            str(port),
            "--plugin-origin",
            "https://scheduling.example",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with httpx.AsyncClient() as control:
            for _ in range(100):
                try:
                    await control.get(f"{core_url}/__fake/state")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            db = SqliteDatabase(":memory:")
            apply_migrations(db.connection)
            clock = FakeClock(NOW)
            plugin_port = free_port()
            env = base_env(
                PUBLIC_ORIGIN=f"http://localhost:{plugin_port}",
                ENVIRONMENT="development",
                DEE_WAN_DEV_ORIGINS=core_url,
            )
            client = HttpxClient(httpx.AsyncClient(limits=httpx.Limits(max_connections=100)))
            app = make_app(db, clock, http=client, env=env)
            contents = [{"id": f"cnt_{i}", "title": f"Item {i}"} for i in range(rows)]
            await control.post(
                f"{core_url}/__fake/seed",
                json={"persons": [{"id": "usr_editor", "name": "Ada"}], "contents": contents},
            )
            installation = await install(app, plugin_port, control, core_url)
            state = (await control.get(f"{core_url}/__fake/state")).json()
            groups = {g["primary_id"]: g for g in state["groups"]}
            for i in range(rows):
                group = groups[f"cnt_{i}"]
                await schedules.create(
                    db,
                    NewSchedule(
                        id=f"sch_{i}",
                        installation_id=installation,
                        content_id=f"cnt_{i}",
                        kind="publish",
                        to_state="published",
                        version_id=group["current_version_id"],
                        workflow_revision=group["revision"],
                        due_at=NOW,
                        timezone="UTC",
                        local_time="x",
                        fold=None,
                        requested_by="usr_editor",
                        requested_by_name="Ada",
                    ),
                    NOW - 60_000,
                )
            await control.post(f"{core_url}/__fake/latency", json={"seconds": latency_s})
            before = db.round_trips
            started = time.perf_counter()
            report = await app.tick(NOW)
            wall = time.perf_counter() - started
            assert report.get("completed") == rows, report
            await client.aclose()
            assert report["d1_round_trips"] == db.round_trips - before, report
            return wall, db.round_trips - before, report["d1_statements"]
    finally:
        server.terminate()
        server.wait(10)


async def install(app: App, port: int, control: httpx.AsyncClient, core_url: str) -> str:
    """Install through the real protocol: serve the app briefly so the core can reach it."""
    server = uvicorn.Server(
        uvicorn.Config(AsgiApp(app), host="127.0.0.1", port=port, log_level="error", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        answer = await control.post(
            f"{core_url}/__fake/install",
            json={"code": await mint(app), "plugin_origin": f"http://localhost:{port}"},
        )
        if answer.status_code != 201:
            raise RuntimeError(answer.text)
        return str(answer.json()["installation"]["id"])
    finally:
        server.should_exit = True
        await task


# -- 3: the due-row query at scale -----------------------------------------------------------


def build_table(path: Path, total: int, live: int) -> sqlite3.Connection:
    """`total` schedules of which `live` are pending (half of those due now); the rest history,
    all of it finished over a day ago but one row in 1,000, refused within the last day."""
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn)
    conn.executemany(
        "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
        " token_rotated_at, last_sent_at) VALUES (?, 's', 'https://cms.example', 'x', 0, 0, ?)",
        [(f"ins_{i}", NOW - i * 60_000) for i in range(50)],
    )
    live_every = max(1, total // live)
    conn.execute("BEGIN")
    conn.execute(
        f"""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {total})
        INSERT INTO schedules (id, installation_id, content_id, kind, to_state, version_id,
            workflow_revision, revision, idempotency_key, due_at, timezone, local_time, status,
            result_code, attempt_count, next_attempt_at, requested_by, requested_by_name,
            created_at, updated_at)
        SELECT 'sch_' || i, 'ins_' || (i % 50), 'cnt_' || i, 'publish', 'published', 'v', 1, 1,
               'k' || i, {NOW} - 86400000 + (i % 172800) * 1000, 'UTC', 'x',
               CASE WHEN i % {live_every} = 0 THEN 'pending'
                    WHEN i % 1000 = 1 THEN 'refused' ELSE 'completed' END,
               CASE WHEN i % {live_every} = 0 THEN NULL
                    WHEN i % 1000 = 1 THEN 'scheduled_target_stale'
                    ELSE 'transition_applied' END, 1,
               CASE WHEN i % {live_every} = 0 THEN
                    CASE WHEN (i / {live_every}) % 2 = 0 THEN {NOW} - 60000 ELSE {NOW} + 3600000 END
               END,
               'usr', 'Ada', 0,
               CASE WHEN i % {live_every} != 0 AND i % 1000 = 1
                    THEN {NOW} - (i % 86400) * 1000 ELSE 0 END
          FROM n
        """
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    return conn


def time_query(conn: sqlite3.Connection, runs: int = 30) -> float:
    return median_time(lambda: conn.execute(DUE_SQL, (NOW, 20)).fetchall(), runs)


def time_status(conn: sqlite3.Connection, runs: int = 30) -> float:
    def status() -> None:
        conn.execute(BACKLOG_SQL, (NOW,)).fetchall()
        conn.execute(COUNTS_SQL, (NOW - 86_400_000,)).fetchall()

    return median_time(status, runs)


def median_time(work: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def plan(conn: sqlite3.Connection) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + DUE_SQL, (NOW, 20))]


def query_figures(big: int, live: int) -> None:
    """Live rows held constant while finished history grows: the realistic shape of the table."""
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        status_times: dict[tuple[int, int], tuple[float, float]] = {}
        for total, live_rows in ((10_000, live), (big, live), (big, big // 100)):
            conn = build_table(Path(tmp) / f"s{total}_{live_rows}.sqlite3", total, live_rows)
            with_index = time_query(conn)
            status_times[(total, live_rows)] = (time_status(conn), 0.0)
            if (total, live_rows) == (big, live):
                print("  query plan:")
                for line in plan(conn):
                    print(f"    {line}")
            conn.execute("DROP INDEX schedules_finished")
            status_times[(total, live_rows)] = (
                status_times[(total, live_rows)][0],
                time_status(conn, runs=5),
            )
            conn.execute("DROP INDEX schedules_waiting")
            conn.execute("DROP INDEX schedules_leased")
            without_index = time_query(conn, runs=5)
            results[(total, live_rows)] = with_index
            print(
                f"  {total:>9,} rows, {live_rows:>6,} live: {with_index * 1000:7.3f} ms "
                f"(without the partial indexes: {without_index * 1000:8.2f} ms)"
            )
            conn.close()
        ratio = results[(big, live)] / results[(10_000, live)]
        print(f"  {big:,} vs 10,000 rows, same live rows: {ratio:.2f}x the time")
        print("4. /admin/status's queries (due backlog + counts by status), same tables:")
        for (total, live_rows), (indexed, plain) in status_times.items():
            print(
                f"  {total:>9,} rows, {live_rows:>6,} live: {indexed * 1000:7.2f} ms "
                f"(without schedules_finished: {plain * 1000:8.2f} ms)"
            )


# -- 5: the operator's routes and the tick's record over the tick history --------------------


def add_history(conn: sqlite3.Connection, days: int) -> None:
    """A tick a minute for `days` days up to NOW (one failed a day, sends at the top of each
    hour), and the running totals they add up to."""
    columns = ", ".join(REPORT_COLUMNS)
    values = ", ".join(
        "(CASE WHEN i % 60 = 0 THEN 20 ELSE 0 END)"
        if column in ("sends", "completed", "due", "claimed", "lateness_count")
        else "(CASE WHEN i % 60 = 0 THEN 1200 ELSE 0 END)"
        if column.startswith("lateness_")
        else "0"
        for column in REPORT_COLUMNS
    )
    conn.execute("BEGIN")
    conn.execute(
        f"""
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {days * 1440})
        INSERT INTO tick_history (at, kind, error, duration_ms, backlog, {columns})
        SELECT {NOW} - i * 60000, 'tick', CASE WHEN i % 1440 = 700 THEN 'DatabaseError' END,
               120, 0, {values}
          FROM n
        """
    )
    conn.executemany(
        "INSERT INTO runner_totals (name, value) VALUES (?, ?)",
        [(name, 1000) for name in ("ticks:tick", "sends:completed", "lateness_count")],
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")


def time_route(app: App, path: str, headers: dict[str, str], runs: int) -> float:
    async def one() -> float:
        request = Request("GET", "https://scheduling.example" + path, Headers(headers))
        started = time.perf_counter()
        response = await app.handle(request)
        elapsed = time.perf_counter() - started
        assert response.status in (200, 503), response.body[:300]
        return elapsed

    async def all_runs() -> float:
        return statistics.median([await one() for _ in range(runs)])

    return asyncio.run(all_runs())


def time_record(db: SqliteDatabase, runs: int) -> float:
    """The tick's record (history row with its backlog count, totals, pruning), rolled back
    after each run so every run writes into the same table."""
    report = TickReport(sends=20, completed=20)
    for lateness in range(20):
        report.sent(lateness * 1000)
    samples = []
    for k in range(runs):
        statements = invocation.record(
            db, kind="tick", at=NOW + 60_000 + k, duration_ms=900, ended_at=NOW, report=report
        )
        db.connection.execute("SAVEPOINT bench")
        started = time.perf_counter()
        for statement in statements:
            db.connection.execute(statement.sql, statement.params)  # type: ignore[attr-defined]
        samples.append(time.perf_counter() - started)
        db.connection.execute("ROLLBACK TO bench")
        db.connection.execute("RELEASE bench")
    return statistics.median(samples)


def operator_figures(big: int, live: int) -> None:
    basic = "Basic " + base64.b64encode(f"op:{ADMIN_SECRET}".encode()).decode()
    routes = {
        "/healthz": {},
        "/admin/metrics": {"authorization": f"Bearer {ADMIN_SECRET}"},
        "/admin": {"authorization": basic},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for total, days in ((10_000, 7), (big, 1), (big, 7)):
            path = Path(tmp) / f"o{total}_{days}.sqlite3"
            conn = build_table(path, total, live)
            add_history(conn, days)
            conn.close()
            db = SqliteDatabase(path)
            app = make_app(db, FakeClock(NOW + 30_000))
            times = {route: time_route(app, route, h, 20) for route, h in routes.items()}
            record = time_record(db, 20)
            ticks = db.connection.execute("SELECT count(*) FROM tick_history").fetchone()[0]
            line = ", ".join(f"{route} {ms * 1000:.2f} ms" for route, ms in times.items())
            print(
                f"  {total:>9,} rows, {ticks:>6,} ticks: {line}, the record {record * 1000:.2f} ms"
            )
            if (total, days) == (big, 7):
                for name, sql, params in (
                    ("/healthz", HEALTH_SQL, (NOW,)),
                    ("a window", SERIES_SQL, (NOW - 7 * 86_400_000, NOW, 3_600_000)),
                    ("pruning", PRUNE_SQL, (NOW - 7 * 86_400_000,)),
                ):
                    steps = [
                        r[3] for r in db.connection.execute("EXPLAIN QUERY PLAN " + sql, params)
                    ]
                    print(f"  plan, {name}: " + "; ".join(steps))
                db.connection.execute("DROP INDEX tick_history_ok")
                db.connection.execute("DROP INDEX tick_history_at")
                plain = {route: time_route(app, route, h, 5) for route, h in routes.items()}
                line = ", ".join(f"{route} {ms * 1000:.2f} ms" for route, ms in plain.items())
                print(
                    f"  same, the history's indexes dropped: {line}, "
                    f"the record {time_record(db, 5) * 1000:.2f} ms"
                )
            db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--live", type=int, default=200, help="pending rows, held constant")
    args = parser.parse_args()
    random.seed(1)
    print(
        f"1-2. one tick against fake_core on loopback, {args.latency * 1000:.0f} ms per transition:"
    )
    one, one_trips, one_statements = asyncio.run(tick_figures(args.latency, 1))
    twenty, twenty_trips, twenty_statements = asyncio.run(tick_figures(args.latency, 20))
    print(
        f"  tick of  1 row : {one * 1000:7.1f} ms, {one_trips} D1 round trips, "
        f"{one_statements} statements"
    )
    print(
        f"  tick of 20 rows: {twenty * 1000:7.1f} ms, {twenty_trips} D1 round trips, "
        f"{twenty_statements} statements"
    )
    waves = -(-20 // 6)
    print(
        f"  20-row tick / 1-row tick: {twenty / one:.2f}x (six connections: {waves} waves, "
        f"so {waves}x at best; sequential sends would be ~20x)"
    )
    print("3. the due-row query (LIMIT 20; half the live rows are due):")
    query_figures(args.big, args.live)
    print("5. the operator's routes (median through the app) and the tick's record:")
    operator_figures(args.big, args.live)


if __name__ == "__main__":
    main()
