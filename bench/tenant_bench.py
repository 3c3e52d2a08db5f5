"""One installation's slow Dee Wan beside an honest one's, in one inline tick (issue 45 item 9).

A core on loopback answers the slow installation's transitions after `--slow` seconds (9.5)
and the honest one's after `--honest` seconds (0.2). The slow installation's rows are written
first, then the honest one's, all due now; one tick sends them through the CPython runtime
(httpx, SQLite D1) with the default settings. Printed: how long after the tick started the
honest installation's first and last requests arrived, and the most requests of the slow one
the core had at once while the honest one still had some to send. Wall time: a loaded
machine stretches it.

    python -m bench.tenant_bench [--slow-rows 40] [--honest-rows 1] [--slow 9.5] [--honest 0.2]

Run from the repo root with the venv's Python (it imports `tests` for the app's test wiring).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from scheduling.runtimes.cpython.adapters import HttpxClient, SystemClock
from tests.support.activation import install
from tests.support.app import base_env, make_app, memory_db
from tests.support.loopback_core import Reply, loopback_core
from tests.support.world import insert_due


async def run(slow_rows: int, honest_rows: int, slow_s: float, honest_s: float) -> None:
    def reply(command: dict[str, Any], headers: dict[str, str]) -> Reply:
        slow = headers["idempotency-key"].startswith("sched:ins_slow:")
        return Reply(delay_s=slow_s if slow else honest_s)

    with loopback_core(honest_s, reply) as core:
        db = memory_db()
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        for installation in ("ins_slow", "ins_honest"):
            await install(app, installation, base_url=core.base_url)
        now = SystemClock().now_ms()
        for i in range(slow_rows):
            await insert_due(db, "ins_slow", f"a_slow_{i}", now - 1_000)
        for i in range(honest_rows):
            await insert_due(db, "ins_honest", f"b_honest_{i}", now - 1_000)
        started = time.time()
        report = await app.tick(now)
    arrivals = [(r.at, r.headers.get("idempotency-key", "")) for r in core.received]
    honest = [at - started for at, key in arrivals if key.startswith("sched:ins_honest:")]
    last_honest = started + max(honest)
    slow_before = sum(
        1 for at, key in arrivals if key.startswith("sched:ins_slow:") and at <= last_honest
    )
    print(
        f"{slow_rows} slow rows at {slow_s} s, {honest_rows} honest at {honest_s} s:"
        f" honest first {min(honest):.1f} s, last {max(honest):.1f} s after the tick began;"
        f" slow requests sent by then {slow_before}; tick: {report['sends']} sent,"
        f" {report['completed']} completed"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-rows", type=int, default=40)
    parser.add_argument("--honest-rows", type=int, default=1)
    parser.add_argument("--slow", type=float, default=9.5)
    parser.add_argument("--honest", type=float, default=0.2)
    args = parser.parse_args()
    asyncio.run(run(args.slow_rows, args.honest_rows, args.slow, args.honest))


if __name__ == "__main__":
    main()
