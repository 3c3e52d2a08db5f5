"""1,000 schedules refused in one burst, each told to its installation's webhook endpoint.

The same burst as bench/burst_bench.py (N schedules due at one round hour over 10
installations, a core on loopback answering after 200 ms), but the core refuses every
transition (409 scheduled_target_stale) and each installation has one endpoint subscribed
to `schedule.refused`, a receiver on loopback answering 204 after `--receiver-latency`.
Ticks run at T, T+1 min, … until nothing is live and the outbox is empty. Printed side by
side, in one run: the burst without any endpoint, then with them (at the default settings,
and with MAX_SENDS_PER_TICK raised to 2,000 so one tick may make both the 1,000 transitions
and the 1,000 deliveries): the transitions' lateness (due → the request leaving), how many
webhooks were delivered, and the time from each settle to its delivery (p50/p99/max).
Asserts nothing. CPython runtime (sqlite3, httpx).

    python -m bench.webhook_bench [--rows 1000] [--latency 0.2] [--receiver-latency 0.02]
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
)
from scheduling.domain import associated_data, webhook_signing
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.http_client import HttpxClient
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import TOKEN_KEY, base_env, make_app
from tests.support.loopback_core import Reply, loopback_core
from tests.support.webhooks import LoopbackReceiver, Received, loopback_receiver, signed_by

MAX_TICKS = 10
STALE = Reply(409, b'{"code":"scheduled_target_stale"}')
LIVE_SQL = (
    "SELECT (SELECT count(*) FROM schedules WHERE status IN ('pending', 'retrying', 'running'))"
    " + (SELECT count(*) FROM webhook_deliveries WHERE status IN ('waiting', 'sending')) AS n"
)
DELAY_SQL = (
    "SELECT finished_at - created_at AS delay FROM webhook_deliveries WHERE status = 'delivered'"
)


@dataclass
class Run:
    label: str
    ticks: list[dict[str, int]] = field(default_factory=list)
    lateness_ms: list[int] = field(default_factory=list)
    delays_ms: list[int] = field(default_factory=list)
    received: int = 0
    verified: int = 0


async def run(
    label: str,
    rows: int,
    latency_s: float,
    receiver: LoopbackReceiver | None,
    **settings: str,
) -> Run:
    result = Run(label)
    with loopback_core(latency_s, lambda _body, _headers: STALE) as core:
        db = SqliteDatabase(":memory:")
        apply_migrations(db.connection)
        crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url, **settings)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        sealed = {}
        for i in range(INSTALLATIONS):
            context = associated_data.installation_token(f"ins_{i}")
            sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
        statements = installation_rows(core.base_url, lambda _plain, context: sealed[context])
        secrets: dict[str, str] = {}
        if receiver is not None:
            for i in range(INSTALLATIONS):
                statements += await endpoint_rows(crypto, f"ins_{i}", receiver.url, secrets)
        statements += list(schedule_rows(rows))
        await db.batch([db.prepare(sql).bind(*params) for sql, params in statements])
        for k in range(MAX_TICKS):
            result.ticks.append(await app.tick(T + k * MINUTE))
            if (await db.prepare(LIVE_SQL).first() or {}).get("n") == 0:
                break
        result.lateness_ms = [r["late"] for r in (await db.prepare(LATENESS_SQL).all()).results]
        result.delays_ms = [r["delay"] for r in (await db.prepare(DELAY_SQL).all()).results]
        if receiver is not None:
            result.received = len(receiver.deliveries)
            result.verified = sum(1 for d in receiver.deliveries if signed(secrets, d))
            receiver.deliveries.clear()
        db.close()
    return result


async def endpoint_rows(
    crypto: CpythonCrypto, installation_id: str, url: str, secrets: dict[str, str]
) -> list[tuple[str, list[Any]]]:
    endpoint_id = f"whe_{installation_id}"
    secret = webhook_signing.new_secret(crypto.random_token())
    secrets[endpoint_id] = secret
    sealed = await webhook_signing.seal_secret(crypto, installation_id, endpoint_id, secret)
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
    window: the ticks run at T, hours ahead of the wall clock)."""
    endpoint_id = "whe_" + delivery.headers["webhook-id"].rsplit("_whe_", 1)[1]
    return signed_by(secrets[endpoint_id], delivery)


def show(result: Run) -> None:
    busy = [t for t in result.ticks if t.get("sends") or t.get("webhook_sends")]
    late = result.lateness_ms
    print(f"  {result.label}")
    print(
        f"    transitions: {len(late):,} sent, lateness due→request p50 "
        f"{percentile(late, 0.5) / 1000:.1f} s, p99 {percentile(late, 0.99) / 1000:.1f} s, "
        f"max {max(late, default=0) / 1000:.1f} s; ticks used {len(busy)}, "
        f"D1 statements per tick max {max((t['d1_statements'] for t in busy), default=0)}"
    )
    if result.received or result.delays_ms:
        delays = result.delays_ms
        print(
            f"    webhooks: {len(delays):,} delivered ({result.received:,} received, "
            f"{result.verified:,} verified with standardwebhooks); settle→delivery p50 "
            f"{percentile(delays, 0.5) / 1000:.1f} s, p99 {percentile(delays, 0.99) / 1000:.1f} s, "
            f"max {max(delays, default=0) / 1000:.1f} s; per tick: "
            + ", ".join(f"{t.get('webhooks_delivered', 0)}" for t in busy)
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--receiver-latency", type=float, default=0.02)
    args = parser.parse_args()
    print(
        f"{args.rows:,} schedules due at one round hour over {INSTALLATIONS} installations, all "
        f"refused by a core answering in {args.latency * 1000:.0f} ms; one endpoint per "
        f"installation, answering in {args.receiver_latency * 1000:.0f} ms. "
        f"Load average before: {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    show(await run("without endpoints", args.rows, args.latency, None))
    with loopback_receiver(args.receiver_latency) as receiver:
        show(await run("with endpoints, defaults", args.rows, args.latency, receiver))
        show(
            await run(
                "with endpoints, MAX_SENDS_PER_TICK=2000",
                args.rows,
                args.latency,
                receiver,
                MAX_SENDS_PER_TICK="2000",
            )
        )
    print(
        f"Load average after: {os.getloadavg()[0]:.2f} "
        f"({time.perf_counter() - started:.0f} s of runs)"
    )


if __name__ == "__main__":
    asyncio.run(main())
