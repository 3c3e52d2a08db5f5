"""1,000 schedules refused in one burst, each told to its installation's webhook endpoint: how
long from each settle to its delivery's first attempt, with the cron alone and with an alarm
clock per installation.

The same burst as bench/burst_bench.py (N schedules due at one instant over 10
installations, a core on loopback answering after 200 ms), but the core refuses every
transition (409 scheduled_target_stale) and each installation has one endpoint subscribed
to `schedule.refused`, a receiver on loopback answering 204 after `--receiver-latency`.

Printed side by side, in one run, on CPython (sqlite3, httpx, the local runtime's clocks)
and on the real Worker entry under Pyodide (the harness: Miniflare's D1, six connections an
invocation, its Durable Objects):

- cron only, at the defaults: ticks at T, T+1 min, … (a round hour ahead); the tick sends
  the 1,000 transitions, using its 1,000 subrequests, so the deliveries wait for the next
  tick;
- clocks on (`SCHEDULE_CLOCK`), the cron silenced: the rows are due a few seconds ahead of
  the wall clock; each installation's alarm sends its rows and, every two seconds of
  sending, delivers the events its settles wrote, in the same invocation.

For each: the transitions' lateness (due → the request leaving), the deliveries (verified
with the official `standardwebhooks`), and settle → first attempt p50/p99/max (the goal with
the clocks: p99 ≤ 5 s). Asserts nothing.

    python -m bench.webhook_bench [--rows 1000] [--latency 0.2] [--receiver-latency 0.02]
                                  [--runtime cpython pyodide] [--model cron clocks]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import time
from dataclasses import dataclass, field
from typing import Any

from bench.burst_bench import (
    INSTALLATIONS,
    LATENESS_SQL,
    MINUTE,
    T,
    installation_rows,
    percentile,
    schedule_rows,
    seed_pyodide,
)
from scheduling.actions.releases import tell_clock
from scheduling.channels import webhook
from scheduling.domain.secrets import installation_token
from scheduling.runtimes.cpython.adapters import CpythonCrypto, HttpxClient, SystemClock
from scheduling.runtimes.cpython.server import LocalClocks
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import TOKEN_KEY, base_env, make_app
from tests.support.loopback_core import Loopback, Received, Reply, loopback_core, loopback_receiver
from tests.support.webhooks import signed_by

MAX_TICKS = 10
SECOND = 1_000
AHEAD_S = 10  # clocks on: the rows are due this long after they are written
STALE = Reply(409, b'{"code":"scheduled_target_stale"}')
LIVE_SQL = (
    "SELECT (SELECT count(*) FROM schedules WHERE status IN ('pending', 'retrying', 'running'))"
    " + (SELECT count(*) FROM webhook_deliveries WHERE status IN ('waiting', 'sending')) AS n"
)
# A delivered one's first attempt is its last when it took one (the receiver answers 204).
FIRST_ATTEMPT_SQL = (
    "SELECT last_attempt_at - created_at AS delay FROM webhook_deliveries"
    " WHERE status = 'delivered' AND attempt_count = 1"
)
# Clocks on: the alarms, and how many deliveries each made.
ALARMS_SQL = "SELECT deliveries_delivered FROM tick_history WHERE kind = 'alarm'"
LABELS = {"cron": "cron only", "clocks": "clocks on, the cron silenced"}


@dataclass
class Run:
    label: str
    runtime: str
    lateness_ms: list[int] = field(default_factory=list)
    first_attempt_ms: list[int] = field(default_factory=list)
    received: int = 0
    verified: int = 0
    invocations: int = 0  # ticks (cron only) or alarms (clocks on)
    delivering: int = 0  # of those, the ones that delivered something


def new_secret(installation_id: str, secrets: dict[str, str]) -> tuple[str, str, str]:
    """A fresh secret for the installation's endpoint: its id, the secret, and the associated
    data it is sealed with."""
    endpoint_id = f"whe_{installation_id}"
    secret = webhook.new_secret(base64.urlsafe_b64encode(os.urandom(32)).decode())
    secrets[endpoint_id] = secret
    return endpoint_id, secret, webhook.secret_context(installation_id, endpoint_id)


def endpoint_rows(
    installation_id: str, endpoint_id: str, url: str, sealed: str
) -> list[tuple[str, list[Any]]]:
    return [
        (
            "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
            " created_at, secret_rotated_at) VALUES (?, ?, ?, ?, 0, 0)",
            [endpoint_id, installation_id, url, sealed],
        ),
        (
            "INSERT INTO notification_subscriptions (endpoint_id, event_type)"
            " VALUES (?, 'schedule.refused')",
            [endpoint_id],
        ),
    ]


def signed(secrets: dict[str, str], delivery: Received) -> bool:
    """The official library's signature for the endpoint's secret (without its five-minute
    window: the cron-only ticks run at T, hours ahead of the wall clock)."""
    endpoint_id = "whe_" + delivery.headers["webhook-id"].rsplit("_whe_", 1)[1]
    return signed_by(secrets[endpoint_id], delivery)


def received(run: Run, receiver: Loopback, secrets: dict[str, str]) -> None:
    run.received = len(receiver.received)
    run.verified = sum(1 for d in receiver.received if signed(secrets, d))
    receiver.received.clear()


def seconds_ahead(seconds: int) -> int:
    return (int(time.time()) + seconds) * SECOND


def counted(run: Run, reports: list[dict[str, Any]]) -> None:
    run.invocations = len(reports)
    run.delivering = sum(1 for r in reports if r.get("deliveries_delivered"))


# -- CPython: the app on sqlite3 + httpx, the local runtime's clocks ----------------------------


async def run_cpython(rows: int, latency_s: float, receiver: Loopback, model: str) -> Run:
    run = Run(LABELS[model], "CPython")
    clocks_on = model == "clocks"
    receiver_origin = receiver.url.rsplit("/", 1)[0]
    with loopback_core(latency_s, lambda _body, _headers: STALE) as core:
        db = SqliteDatabase(":memory:")
        apply_migrations(db.connection)
        crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
        origins = f"{core.base_url},{receiver_origin}"
        clock_var = {"SCHEDULE_CLOCK": "1"} if clocks_on else {}
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=origins, **clock_var)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        sealed: dict[str, str] = {}
        for i in range(INSTALLATIONS):
            context = installation_token(f"ins_{i}")
            sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
        statements = installation_rows(core.base_url, lambda _plain, context: sealed[context])
        secrets: dict[str, str] = {}
        for i in range(INSTALLATIONS):
            endpoint_id, secret, context = new_secret(f"ins_{i}", secrets)
            sealed_secret = await crypto.seal(secret, context)
            statements += endpoint_rows(f"ins_{i}", endpoint_id, receiver.url, sealed_secret)
        start = seconds_ahead(AHEAD_S) if clocks_on else T
        statements += list(schedule_rows(rows, INSTALLATIONS, lambda i: start))
        await db.batch([db.prepare(sql).bind(*params) for sql, params in statements])
        if clocks_on:
            clocks = LocalClocks(app)  # each installation's alarms with their own client
            app.services.clocks = clocks
            for i in range(INSTALLATIONS):  # as each create tells its clock after its write
                await tell_clock(app.services, f"ins_{i}")
            await asyncio.sleep(max(0, start / 1000 - time.time()))
            while (await db.prepare(LIVE_SQL).first() or {}).get("n"):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            await clocks.idle()
            await clocks.stop()
            counted(run, (await db.prepare(ALARMS_SQL).all()).results)
        else:
            reports = []
            for k in range(MAX_TICKS):
                reports.append(await app.tick(T + k * MINUTE))
                if (await db.prepare(LIVE_SQL).first() or {}).get("n") == 0:
                    break
            counted(run, reports)
        run.lateness_ms = [r["late"] for r in (await db.prepare(LATENESS_SQL).all()).results]
        run.first_attempt_ms = [
            r["delay"] for r in (await db.prepare(FIRST_ATTEMPT_SQL).all()).results
        ]
        received(run, receiver, secrets)
        db.close()
    return run


# -- Pyodide: the real Worker entry under the harness, its Durable Objects for the clocks --------


def run_pyodide(rows: int, latency_s: float, receiver: Loopback, model: str) -> Run:
    from tests.pyodide_harness.harness import shared_harness

    run = Run(LABELS[model], "Pyodide")
    worker = shared_harness()
    receiver_origin = receiver.url.rsplit("/", 1)[0]
    with loopback_core(latency_s, lambda _body, _headers: STALE) as core:
        origins = f"{core.base_url},{receiver_origin}"
        with worker.vars(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=origins):
            worker.execute(
                ("DELETE FROM webhook_deliveries", []),
                ("DELETE FROM notification_subscriptions", []),
                ("DELETE FROM notification_endpoints", []),
            )
            seed_pyodide(worker, core.base_url, rows, INSTALLATIONS)
            secrets: dict[str, str] = {}
            for i in range(INSTALLATIONS):
                endpoint_id, secret, context = new_secret(f"ins_{i}", secrets)
                sealed = worker.seal(secret, context)
                worker.execute(*endpoint_rows(f"ins_{i}", endpoint_id, receiver.url, sealed))
            if model == "clocks":
                with worker.bound_clock():
                    alarms(run, worker, rows)
            else:
                ticks(run, worker)
            run.lateness_ms = [r["late"] for r in worker.sql(LATENESS_SQL)]
            run.first_attempt_ms = [r["delay"] for r in worker.sql(FIRST_ATTEMPT_SQL)]
            received(run, receiver, secrets)
    return run


def ticks(run: Run, worker: Any) -> None:
    reports = []
    for k in range(MAX_TICKS):
        worker.scheduled(T + k * MINUTE, timeout_s=1800)
        [report] = worker.sql(
            "SELECT deliveries_delivered FROM tick_history WHERE kind = 'tick'"
            " ORDER BY rowid DESC LIMIT 1"
        )
        reports.append(report)
        if worker.sql(LIVE_SQL)[0]["n"] == 0:
            break
    counted(run, reports)


def alarms(run: Run, worker: Any, rows: int) -> None:
    """The rows moved to a second a few seconds ahead, each clock told, then waited for."""
    start = seconds_ahead(AHEAD_S)
    move = "UPDATE schedules SET due_at = ?1, next_attempt_at = ?1 WHERE id = ?2"
    for first in range(0, rows, 500):
        worker.execute(*((move, [start, f"sch_{i}"]) for i in range(first, min(rows, first + 500))))
    worker.clock(tell=[f"ins_{i}" for i in range(INSTALLATIONS)])
    time.sleep(max(0, start / 1000 - time.time()))
    while worker.sql(LIVE_SQL)[0]["n"]:
        time.sleep(0.2)
    worker.clock(wait=True)
    counted(run, worker.sql(ALARMS_SQL))


# -- figures -----------------------------------------------------------------------------------


def seconds(values: list[int], p: float) -> str:
    return f"{percentile(values, p) / 1000:.1f} s"


def show(run: Run) -> None:
    late, first = run.lateness_ms, run.first_attempt_ms
    kind = "alarms" if run.label.startswith("clocks") else "ticks"
    print(f"  {run.runtime:8} {run.label}")
    print(
        f"           transitions: {len(late):,} sent, lateness due→request p50 "
        f"{seconds(late, 0.5)}, p99 {seconds(late, 0.99)}, max {max(late, default=0) / 1000:.1f} s"
    )
    print(
        f"           deliveries: {len(first):,} delivered at the first attempt ({run.received:,}"
        f" received, {run.verified:,} verified with standardwebhooks); {run.invocations:,}"
        f" {kind}, {run.delivering:,} of them delivering"
    )
    print(
        f"           settle → first attempt: p50 {seconds(first, 0.5)}, "
        f"p99 {seconds(first, 0.99)}, max {max(first, default=0) / 1000:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--receiver-latency", type=float, default=0.02)
    parser.add_argument("--runtime", nargs="+", default=["cpython", "pyodide"])
    parser.add_argument("--model", nargs="+", default=["cron", "clocks"], choices=list(LABELS))
    args = parser.parse_args()
    print(
        f"{args.rows:,} schedules due at one instant over {INSTALLATIONS} installations, all "
        f"refused by a core answering in {args.latency * 1000:.0f} ms; one endpoint per "
        f"installation, answering in {args.receiver_latency * 1000:.0f} ms. "
        f"Load average before: {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    with loopback_receiver(args.receiver_latency) as receiver:
        for model in args.model:
            if "cpython" in args.runtime:
                show(asyncio.run(run_cpython(args.rows, args.latency, receiver, model)))
            if "pyodide" in args.runtime:
                show(run_pyodide(args.rows, args.latency, receiver, model))
    print(
        f"Load average after: {os.getloadavg()[0]:.2f} "
        f"({time.perf_counter() - started:.0f} s of runs)"
    )


if __name__ == "__main__":
    main()
