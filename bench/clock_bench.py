"""Sends on the second: an alarm clock per installation, the cron silenced.

Two runs, each on CPython (the app on sqlite3 with the local runtime's clocks, each
installation's alarm with its own HTTP client), across `--clock-processes` processes on one
SQLite file (`run_processes` below, bench/clock_processes.py, with the CPU one send costs),
and on the real Worker entry under Pyodide
(the harness: its Durable Object namespace of the entry's own `ScheduleClock`, each
`alarm()` its own invocation with six connections, as in workerd). The rows are written
straight into D1 and each installation's clock is told as a create tells it after its
write; no cron tick runs. A core on loopback, in its own process (bench/core_process.py),
answers every transition after `--latency`.

- Spread (`--spread-rows 100`): N schedules due over the next `--spread-minutes`, each on
  its own second, over 10 installations. Prints lateness from the due second to the
  request leaving (p50 / p99 / max, and how many left before it: must be 0), and the
  lead the alarms used: woken `CLOCK_LEAD_MS` early, how long each then waited for its
  second (what the invocation itself took is the lead less that).
- Burst (`--burst-rows 10000`): N due at one second over 100 installations.

    python -m bench.clock_bench [--spread-rows 100] [--burst-rows 10000]
                                [--latency 0.2] [--runtime cpython processes pyodide model]
                                [--clock-processes 2]

Run from the repo root with the venv's Python. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import looptime

from bench.burst_bench import (
    INSTALLATIONS,
    MANY_INSTALLATIONS,
    SEND_CONCURRENCY,
    STATUS_SQL,
    TimedDatabase,
    installation_rows,
    percentile,
    schedule_rows,
    seed_pyodide,
)
from bench.clock_processes import clock_processes
from bench.core_process import core_process
from scheduling.actions.releases import tell_clock
from scheduling.config import Configuration
from scheduling.domain.secrets import installation_token
from scheduling.ports import Result, Statement
from scheduling.runtimes.cpython.adapters import CpythonCrypto, HttpxClient, SystemClock
from scheduling.runtimes.cpython.server import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import START_MS, TOKEN_KEY, LoopClock, base_env, make_app
from tests.support.in_flight import InFlight
from tests.support.serve_process import development_env, free_port, write_vars
from tests.support.world import MINUTE, World, insert_due

SECOND = 1_000
MAX_IN_FLIGHT = 6
LEAD_MS = Configuration.from_mapping({}).clock_lead_ms  # the default
LATENESS_SQL = (
    "SELECT a.started_at - s.due_at AS late FROM schedule_attempts a"
    " JOIN schedules s ON s.id = a.schedule_id WHERE a.attempt = 1"
)
LIVE_SQL = "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"
ALARMS_SQL = (
    "SELECT d1_statements, waited_ms, cron_delay_ms, sends FROM tick_history"
    " WHERE kind = 'alarm' ORDER BY rowid"
)


@dataclass
class Run:
    runtime: str
    kind: str  # "spread" or "burst"
    rows: int
    installations: int
    latency_s: float
    lateness_ms: list[int] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    alarms: list[dict[str, int]] = field(default_factory=list)  # their history rows
    peak_per_installation: int = 0
    peak_total: int = 0
    busy_seconds: float = 0.0  # from the first due second until the last row settled
    max_connections: int = 0  # under Pyodide: the most one invocation had waiting at once
    d1_ms_per_statement: float = 0.0
    cpu_seconds: float = 0.0  # across clock processes: their CPU
    sent_twice: int | None = None  # across clock processes: keys the core saw more than once


def spread_due(start: int, rows: int, minutes: float) -> Callable[[int], int]:
    """Row i on its own second, evenly over `minutes` from `start`."""
    step = max(1, int(minutes * 60 * SECOND / rows) // SECOND) * SECOND
    return lambda i: start + i * step


def seconds_ahead(seconds: int) -> int:
    return (int(time.time()) + seconds) * SECOND


# -- CPython: the app on sqlite3 + httpx, the local runtime's clocks ------------------------


async def run_cpython(
    kind: str, rows: int, installations: int, latency_s: float, **how: Any
) -> Run:
    run = Run("CPython", kind, rows, installations, latency_s)
    with core_process(latency_s) as core:
        db = SqliteDatabase(":memory:")
        apply_migrations(db.connection)
        timed = TimedDatabase(db)
        env = base_env(
            ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url, SCHEDULE_CLOCK="1"
        )
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
        sealed = {}
        for n in range(installations):
            context = installation_token(f"ins_{n}")
            sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
        start = seconds_ahead(how.get("ahead_s", 15))
        due = spread_due(start, rows, how["minutes"]) if kind == "spread" else (lambda i: start)
        statements = installation_rows(core.base_url, lambda _p, c: sealed[c], installations)
        statements += list(schedule_rows(rows, installations, due))
        await db.batch([db.prepare(sql).bind(*params) for sql, params in statements])
        app.services.db = timed
        clocks = LocalClocks(app)  # each installation's alarms with their own client
        app.services.clocks = clocks
        for n in range(installations):  # as each create tells its clock after its write
            await tell_clock(app.services, f"ins_{n}")
        timed.seconds, timed.statements = 0.0, 0
        last_due = max(due(i) for i in range(rows))
        await asyncio.sleep(max(0, last_due - time.time() * 1000) / 1000)
        while (await db.prepare(LIVE_SQL).first() or {}).get("n"):  # noqa: ASYNC110 - D1 polled
            await asyncio.sleep(0.1)
        run.busy_seconds = time.time() - start / 1000
        await clocks.idle()
        await clocks.stop()
        run.lateness_ms = [r["late"] for r in (await db.prepare(LATENESS_SQL).all()).results]
        run.statuses = {r["k"]: r["n"] for r in (await db.prepare(STATUS_SQL).all()).results}
        run.alarms = (await db.prepare(ALARMS_SQL).all()).results
        seen = core.stats()
        run.peak_per_installation = max(seen["max_in_flight_by"].values(), default=0)
        run.peak_total = seen["max_in_flight"]
        run.d1_ms_per_statement = 1000 * timed.seconds / max(1, timed.statements)
    return run


# -- Pyodide: the real Worker entry, its Durable Objects, six connections each ---------------


def run_pyodide(kind: str, rows: int, installations: int, latency_s: float, **how: Any) -> Run:
    from tests.pyodide_harness.harness import shared_harness

    run = Run("Pyodide", kind, rows, installations, latency_s)
    worker = shared_harness()
    with (
        core_process(latency_s) as core,
        worker.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url),
        worker.bound_clock(),
    ):
        placeholder = seconds_ahead(3_600)  # written first, then moved to its due second
        seed_pyodide(worker, core.base_url, rows, installations, lambda i: placeholder + i)
        start = seconds_ahead(how.get("ahead_s", 15))
        due = spread_due(start, rows, how["minutes"]) if kind == "spread" else (lambda i: start)
        for first in range(0, rows, 500):
            worker.execute(
                *(
                    (
                        "UPDATE schedules SET due_at = ?1, next_attempt_at = ?1 WHERE id = ?2",
                        [due(i), f"sch_{i}"],
                    )
                    for i in range(first, min(rows, first + 500))
                )
            )
        worker.clock(tell=[f"ins_{n}" for n in range(installations)])
        worker.fetch_stats(reset=True)
        last_due = max(due(i) for i in range(rows))
        time.sleep(max(0, last_due / 1000 - time.time()))
        while worker.sql(LIVE_SQL)[0]["n"]:
            time.sleep(0.2)
        run.busy_seconds = time.time() - start / 1000
        worker.clock(wait=True)
        run.lateness_ms = [r["late"] for r in worker.sql(LATENESS_SQL)]
        run.statuses = {r["k"]: r["n"] for r in worker.sql(STATUS_SQL)}
        run.alarms = worker.sql(ALARMS_SQL)
        seen = core.stats()
        run.peak_per_installation = max(seen["max_in_flight_by"].values(), default=0)
        run.peak_total = seen["max_in_flight"]
        run.max_connections = worker.fetch_stats()["max_waiting_for_headers"]
    return run


# -- the model: the same code in loop time, each clock with a CPU of its own ----------------


class OneWriter:
    """A Database whose batches are written one at a time, each taking `ms` of loop time a
    statement: D1's single writer, played."""

    def __init__(self, inner: SqliteDatabase, ms: float) -> None:
        self.inner = inner
        self.ms = ms
        self.statements = 0
        self._writer = asyncio.Lock()

    def prepare(self, sql: str) -> Statement:
        return self.inner.prepare(sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        async with self._writer:
            await asyncio.sleep(len(statements) * self.ms / 1000)
            self.statements += len(statements)
            return await self.inner.batch(statements)


def run_model(kind: str, rows: int, installations: int, latency_s: float, **how: Any) -> Run:
    """The app, its local clocks and the fake Dee Wan in loop time (`looptime`): time passes
    only when every task waits, so CPU costs nothing and what is left is the core's latency,
    the clocks' own waits, and D1's writer at `how["d1_ms"]` a statement. What a deployment
    whose every clock has an isolate of its own would see, as far as the code decides it."""
    base = asyncio.new_event_loop()
    assert isinstance(base, asyncio.BaseEventLoop)
    loop = looptime.patch_event_loop(base, start=0)
    try:
        return loop.run_until_complete(_model(kind, rows, installations, latency_s, **how))
    finally:
        loop.close()


async def _model(kind: str, rows: int, installations: int, latency_s: float, **how: Any) -> Run:
    run = Run(f"model {how['d1_ms']:g} ms", kind, rows, installations, latency_s)
    db = SqliteDatabase(":memory:")
    apply_migrations(db.connection)
    world = World(db, LoopClock(START_MS), env=base_env(SCHEDULE_CLOCK="1"))
    clocks = LocalClocks(world.app, http=lambda: world.app.services.http)
    world.app.services.clocks = clocks
    world.core.faults.set_latency(latency_s)
    watched = world.http.handler = InFlight(world.http.handler)
    start = START_MS + 10 * MINUTE
    due = spread_due(start, rows, how["minutes"]) if kind == "spread" else (lambda i: start)
    made = [await world.install() for _ in range(installations)]
    for i in range(rows):
        content = f"m{i}"
        world.core.state.add_content(content, f"Item {i}")
        group = world.core.state.group_of(content)
        owner = made[i % installations].id
        version, revision = group.current_version_id, group.revision
        await insert_due(db, owner, content, due(i), version_id=version, workflow_revision=revision)
    writer = OneWriter(db, how["d1_ms"])
    world.app.services.db = writer
    for installation in made:
        await tell_clock(world.app.services, installation.id)
    await asyncio.sleep((max(due(i) for i in range(rows)) - world.clock.now_ms()) / 1000)
    while (await db.prepare(LIVE_SQL).first() or {}).get("n"):  # noqa: ASYNC110 - D1 polled
        await asyncio.sleep(0.1)
    run.busy_seconds = (world.clock.now_ms() - start) / 1000
    await clocks.idle()
    await clocks.stop()
    run.lateness_ms = [r["late"] for r in (await db.prepare(LATENESS_SQL).all()).results]
    run.statuses = {r["k"]: r["n"] for r in (await db.prepare(STATUS_SQL).all()).results}
    run.alarms = (await db.prepare(ALARMS_SQL).all()).results
    run.peak_per_installation = max(watched.peak.values(), default=0)
    run.peak_total = watched.peak_total
    return run


# -- figures -----------------------------------------------------------------------------------


def show(run: Run) -> None:
    late = run.lateness_ms
    early = sum(1 for ms in late if ms < 0)
    waited = [a["waited_ms"] for a in run.alarms if a["waited_ms"]]
    took = [LEAD_MS - w for w in waited]
    statements = [a["d1_statements"] for a in run.alarms]
    when = "over" if run.kind == "spread" else "at one second over"
    print(
        f"  {run.runtime:8} {run.rows:>6,} {when}"
        f" {run.installations} installations: sent {len(late):,}, before their second {early},"
        f" alarms {len(run.alarms):,}"
    )
    print(
        f"           lateness due→request: p50 {percentile(late, 0.5) / 1000:.3f} s,"
        f" p99 {percentile(late, 0.99) / 1000:.3f} s, max {max(late, default=0) / 1000:.3f} s"
    )
    if took:
        print(
            f"           alarm woken {LEAD_MS} ms early, then ready after p50"
            f" {percentile(took, 0.5)} ms / max {max(took)} ms (it waited the rest for its"
            " second)"
        )
    print(
        f"           peak in flight at the core: {run.peak_per_installation} for one"
        f" installation (cap {MAX_IN_FLIGHT}), {run.peak_total} in all"
        + (
            f"; most one invocation had waiting for headers: {run.max_connections}"
            if run.max_connections
            else ""
        )
    )
    print(
        f"           D1 statements per alarm: max {max(statements, default=0)}, total"
        f" {sum(statements):,} ({sum(statements) / max(1, len(late)):.2f} per send)"
        + (
            f"; SQLite here {run.d1_ms_per_statement:.2f} ms a statement"
            if run.d1_ms_per_statement
            else ""
        )
    )
    if run.kind == "burst":
        limit = run.installations * SEND_CONCURRENCY / run.latency_s
        rate = len(late) / run.busy_seconds if run.busy_seconds else 0.0
        print(
            f"           all settled {run.busy_seconds:.1f} s after the due second: {rate:.0f}"
            f" sends/s ({run.installations} clocks x {SEND_CONCURRENCY} connections /"
            f" {run.latency_s * 1000:.0f} ms = {limit:.0f}/s at most)"
        )
    if run.cpu_seconds:
        print(
            f"           CPU of the clock processes: {run.cpu_seconds:.1f} s,"
            f" {1000 * run.cpu_seconds / max(1, len(late)):.2f} ms a send"
        )
    if run.sent_twice is not None:
        print(f"           sent twice: {run.sent_twice}")
    print(f"           end state: {dict(sorted(run.statuses.items()))}")


# -- The run across clock processes (`--runtime processes`): the rows and installations
# written into a SQLite file, then `--clock-processes N` processes (bench/clock_processes.py),
# each telling the clocks of its installations as a create tells them. Their CPU is read from
# /proc (Linux) from just before the first due second until the last row settled, so the CPU
# one send costs can be read off it: what one installation's isolate would spend on each.

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User and system CPU of the processes `pids` now."""
    total = 0.0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime, stime
    return total


async def _seal_all(installations: int) -> dict[str, str]:
    crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
    sealed = {}
    for n in range(installations):
        context = installation_token(f"ins_{n}")
        sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
    return sealed


def run_processes(
    kind: str, rows: int, installations: int, latency_s: float, processes: int, **how: Any
) -> Run:
    run = Run(f"{processes} processes", kind, rows, installations, latency_s)
    with tempfile.TemporaryDirectory() as folder, core_process(latency_s) as core:
        db_path = Path(folder) / "plugin.sqlite3"
        db = SqliteDatabase(db_path)
        apply_migrations(db.connection)
        sealed = asyncio.run(_seal_all(installations))
        start = seconds_ahead(how.get("ahead_s", 20))
        due = spread_due(start, rows, how["minutes"]) if kind == "spread" else (lambda i: start)
        statements = installation_rows(core.base_url, lambda _p, c: sealed[c], installations)
        statements += list(schedule_rows(rows, installations, due))
        asyncio.run(db.batch([db.prepare(sql).bind(*params) for sql, params in statements]))
        db.close()
        env = development_env(free_port(), core.base_url, SCHEDULE_CLOCK="1")
        vars_file = write_vars(Path(folder) / "vars", **env)
        with clock_processes(db_path, vars_file, installations, processes) as running:
            pids = [process.pid for process in running]
            cpu_before = cpu_seconds(pids)
            last_due = max(due(i) for i in range(rows))
            time.sleep(max(0, last_due / 1000 - time.time()))
            with sqlite3.connect(db_path) as reader:
                while reader.execute(LIVE_SQL).fetchone()[0]:
                    time.sleep(0.1)
            run.busy_seconds = time.time() - start / 1000
            run.cpu_seconds = cpu_seconds(pids) - cpu_before
        with sqlite3.connect(db_path) as reader:
            reader.row_factory = sqlite3.Row
            run.lateness_ms = [r["late"] for r in reader.execute(LATENESS_SQL)]
            run.statuses = {r["k"]: r["n"] for r in reader.execute(STATUS_SQL)}
            run.alarms = [dict(r) for r in reader.execute(ALARMS_SQL)]
        seen = core.stats()
        run.peak_per_installation = max(seen["max_in_flight_by"].values(), default=0)
        run.peak_total = seen["max_in_flight"]
        run.sent_twice = sum(1 for times in seen["keys"].values() if times > 1)
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spread-rows", type=int, nargs="*", default=[100])
    parser.add_argument("--spread-minutes", type=float, default=3.0)
    parser.add_argument("--burst-rows", type=int, nargs="*", default=[10_000])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument(
        "--runtime", nargs="+", default=["cpython", "processes", "pyodide", "model"]
    )
    parser.add_argument("--clock-processes", type=int, default=2, help="for --runtime processes")
    parser.add_argument("--d1-ms", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    args = parser.parse_args()
    print(
        f"An alarm clock per installation, the cron silenced; core answering in"
        f" {args.latency * 1000:.0f} ms; CLOCK_LEAD_MS={LEAD_MS},"
        f" MAX_IN_FLIGHT_PER_INSTALLATION={MAX_IN_FLIGHT}, SEND_CONCURRENCY={SEND_CONCURRENCY};"
        f" load average before: {os.getloadavg()[0]:.2f}"
    )
    processes = args.clock_processes
    for rows in args.spread_rows:
        how = {"minutes": args.spread_minutes}
        if "cpython" in args.runtime:
            show(asyncio.run(run_cpython("spread", rows, INSTALLATIONS, args.latency, **how)))
        if "processes" in args.runtime:
            show(run_processes("spread", rows, INSTALLATIONS, args.latency, processes, **how))
        if "pyodide" in args.runtime:
            show(run_pyodide("spread", rows, INSTALLATIONS, args.latency, **how))
        for ms in args.d1_ms if "model" in args.runtime else ():
            show(run_model("spread", rows, INSTALLATIONS, args.latency, d1_ms=ms, **how))
    for rows in args.burst_rows:
        if "cpython" in args.runtime:
            show(asyncio.run(run_cpython("burst", rows, MANY_INSTALLATIONS, args.latency)))
        if "processes" in args.runtime:
            show(run_processes("burst", rows, MANY_INSTALLATIONS, args.latency, processes))
        if "pyodide" in args.runtime:
            show(run_pyodide("burst", rows, MANY_INSTALLATIONS, args.latency, ahead_s=20))
        for ms in args.d1_ms if "model" in args.runtime else ():
            show(run_model("burst", rows, MANY_INSTALLATIONS, args.latency, d1_ms=ms))
    print(f"Load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
