"""Releases sent in order (issue 47), on CPython: the app on sqlite3 with httpx, and a core on
loopback in its own process (bench/core_process.py) answering every transition after
`--latency` (200 ms).

- One release of `--items` (200) at its time, the cron-only model (no SCHEDULE_CLOCK: ticks
  at T, T+1 min, … until nothing is live). Prints when the last item was applied after the
  release's time, the per-item overhead beside the core's latency (the span less `items`
  times the latency, per item), that each left after the one before had answered, the ticks it took
  and their D1 statements.
- `--releases` (100) of `--release-items` (100) over as many installations, all at one
  second, through the installations' alarm clocks (the local runtime's, as `serve
  SCHEDULE_CLOCK=1` runs them). Prints when the last item was applied, the slowest
  release's span, and whether every release kept its order.

    python -m bench.release_bench [--items 200] [--releases 100] [--release-items 100]
                                  [--latency 0.2] [--only one|many]

Run from the repo root with the venv's Python. Asserts nothing; the machine's load counts.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import time
from dataclasses import dataclass, field
from typing import Any

from bench.burst_bench import TimedDatabase, installation_rows
from bench.core_process import core_process
from scheduling.actions.releases import tell_clock
from scheduling.app import App
from scheduling.domain.schedules import NewSchedule, new_release
from scheduling.domain.secrets import installation_token
from scheduling.domain.times import ResolvedTime
from scheduling.repository import releases, schedules
from scheduling.runtimes.cpython.adapters import CpythonCrypto, HttpxClient, SystemClock
from scheduling.runtimes.cpython.server import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import TOKEN_KEY, base_env, make_app

SECOND = 1_000
MINUTE = 60_000
LIVE_SQL = (
    "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'queued',"
    " 'running')"
)
# Each item's first try, and the answer that applied it, in send order within its release.
ATTEMPTS_SQL = """SELECT s.release_id, s.release_position, a.started_at, a.finished_at, a.code
  FROM schedule_attempts a JOIN schedules s ON s.id = a.schedule_id
 ORDER BY s.release_id, s.release_position, a.attempt"""


@dataclass
class Result:
    what: str
    items: int
    latency_s: float
    last_applied_s: float = 0.0  # after the release's time
    slowest_span_s: float = 0.0  # of one release: its first try to its last answer
    in_order: bool = True
    applied: int = 0
    ticks: list[dict[str, int]] = field(default_factory=list)
    d1_ms_per_statement: float = 0.0


async def _world(core_url: str, installations: int, *, clocks: bool) -> tuple[App, SqliteDatabase]:
    db = SqliteDatabase(":memory:")
    apply_migrations(db.connection)
    env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core_url)
    if clocks:
        env["SCHEDULE_CLOCK"] = "1"
    app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
    crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
    sealed = {}
    for n in range(installations):
        context = installation_token(f"ins_{n}")
        sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
    made = installation_rows(core_url, lambda _p, c: sealed[c], installations)
    await db.batch([db.prepare(sql).bind(*params) for sql, params in made])
    return app, db


async def _release(
    db: SqliteDatabase, installation_id: str, tag: str, items: int, due: int
) -> None:
    """A waiting release of `items` publishes, written through the schedules' one create."""
    local = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(due // 1000))
    when = ResolvedTime(due, local, "UTC", None)
    made = new_release(f"rel_{tag}", installation_id, ("usr_1", "Ada"), f"R {tag}", when, 0)
    rows = [
        NewSchedule(
            f"sch_{tag}_{n}", installation_id, f"cnt_{tag}_{n}", "publish", "published", "ver_1",
            1, due, "UTC", local, None, "usr_1", "Ada", release_id=made.id,
            release_position=n + 1,
        )
        for n in range(items)
    ]  # fmt: skip
    await schedules.create_all(db, rows, 0, first=[releases.insert(db, made)], max_items=items)


async def _measure(db: SqliteDatabase, result: Result, due: int) -> None:
    tries = (await db.prepare(ATTEMPTS_SQL).all()).results
    by_release: dict[str, list[dict[str, Any]]] = {}
    for row in tries:
        by_release.setdefault(str(row["release_id"]), []).append(row)
    applied = [r for r in tries if r["code"] == "transition_applied"]
    result.applied = len(applied)
    result.last_applied_s = (max(r["finished_at"] for r in applied) - due) / SECOND
    for line in by_release.values():
        done = {r["release_position"]: r["finished_at"] for r in line if r["code"]}
        for r in line:
            before = done.get(r["release_position"] - 1)
            if before is not None and r["started_at"] < before:
                result.in_order = False
        span = max(r["finished_at"] or 0 for r in line) - min(r["started_at"] for r in line)
        result.slowest_span_s = max(result.slowest_span_s, span / SECOND)


async def one_release(items: int, latency_s: float) -> Result:
    """One release of `items` at T, sent by the cron's ticks inline."""
    result = Result("one release, cron ticks", items, latency_s)
    with core_process(latency_s) as core:
        app, db = await _world(core.base_url, 1, clocks=False)
        due = (int(time.time() * 1000) // MINUTE + 2) * MINUTE  # a tick may stand for it now
        await _release(db, "ins_0", "one", items, due)
        timed = TimedDatabase(db)
        app.services.db = timed
        for minute in range(10):
            if not (await db.prepare(LIVE_SQL).first() or {}).get("n"):
                break
            result.ticks.append(await app.tick(due + minute * MINUTE))
        result.d1_ms_per_statement = 1000 * timed.seconds / max(1, timed.statements)
        await _measure(db, result, due)
    return result


async def many_releases(count: int, items: int, latency_s: float) -> Result:
    """`count` releases of `items`, one an installation, at one second, by their clocks."""
    result = Result(
        f"{count} releases over {count} installations, clocks", count * items, latency_s
    )
    with core_process(latency_s) as core:
        app, db = await _world(core.base_url, count, clocks=True)
        due = (int(time.time()) + 20) * SECOND
        for n in range(count):
            await _release(db, f"ins_{n}", f"r{n}", items, due)
        timed = TimedDatabase(db)
        app.services.db = timed
        clocks = LocalClocks(app)
        app.services.clocks = clocks
        for n in range(count):  # as each create tells its clock after its write
            await tell_clock(app.services, f"ins_{n}")
        await asyncio.sleep(max(0, due / 1000 - time.time()))
        while (await db.prepare(LIVE_SQL).first() or {}).get("n"):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        await clocks.idle()
        await clocks.stop()
        result.d1_ms_per_statement = 1000 * timed.seconds / max(1, timed.statements)
        await _measure(db, result, due)
    return result


def report(result: Result) -> None:
    overhead_ms = 0.0
    if result.items and "one release" in result.what:
        overhead_ms = (result.last_applied_s * 1000 - result.items * result.latency_s * 1000) / (
            result.items
        )
    answering = f"Dee Wan answering in {result.latency_s * 1000:.0f} ms"
    print(f"\n{result.what}: {result.items} items, {answering}")
    print(f"  applied: {result.applied} of {result.items}, in order: {result.in_order}")
    print(f"  the last applied {result.last_applied_s:.1f} s after the release's time")
    if overhead_ms:
        print(
            f"  per item: {result.latency_s * 1000:.0f} ms Dee Wan + {overhead_ms:.1f} ms overhead"
        )
    if result.ticks:
        statements = [t["d1_statements"] for t in result.ticks]
        print(f"  ticks: {len(result.ticks)}, D1 statements each: {statements}")
    else:
        print(f"  the slowest release took {result.slowest_span_s:.1f} s from its first try")
    print(f"  D1 (sqlite3): {result.d1_ms_per_statement:.2f} ms a statement")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--releases", type=int, default=100)
    parser.add_argument("--release-items", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--only", choices=("one", "many"))
    args = parser.parse_args()
    if args.only != "many":
        report(asyncio.run(one_release(args.items, args.latency)))
    if args.only != "one":
        report(asyncio.run(many_releases(args.releases, args.release_items, args.latency)))


if __name__ == "__main__":
    main()
