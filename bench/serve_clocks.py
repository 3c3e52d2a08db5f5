"""bench/clock_bench.py's run through the real `serve` (`--runtime serve`): the rows and
installations written into a SQLite file, then `python -m scheduling serve --no-cron
--clock-processes N` with SCHEDULE_CLOCK=1, whose clock processes arm them from D1 as they
start. The CPU of serve and its clock processes is read from /proc (Linux) from just before
the first due second until the last row settled, so the CPU one send costs can be read off
it: what one installation's isolate would spend on each.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sqlite3
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.burst_bench import STATUS_SQL, installation_rows, schedule_rows
from bench.clock_bench import (
    ALARMS_SQL,
    LATENESS_SQL,
    LIVE_SQL,
    Run,
    seconds_ahead,
    spread_due,
)
from bench.core_process import core_process
from scheduling.domain import associated_data
from scheduling.runtimes.cpython.crypto import CpythonCrypto
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import TOKEN_KEY
from tests.support.serve_process import (
    development_env,
    free_port,
    start_serve,
    wait_until_up,
    write_vars,
)

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU of `pid` and of its children now running."""
    total = 0.0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for each in (str(pid), *children):
        try:
            stat = Path(f"/proc/{each}/stat").read_text()
        except FileNotFoundError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime, stime
    return total


def _drain(process: subprocess.Popen[str], lines: list[str]) -> None:
    """serve's output, read as it comes (a full pipe would stop it)."""
    assert process.stdout is not None
    lines.extend(process.stdout)


async def _seal_all(installations: int) -> dict[str, str]:
    crypto = CpythonCrypto(base64.b64decode(TOKEN_KEY))
    sealed = {}
    for n in range(installations):
        context = associated_data.installation_token(f"ins_{n}")
        sealed[context] = await crypto.seal("dwp_" + "A" * 43, context)
    return sealed


def run_serve(
    kind: str, rows: int, installations: int, latency_s: float, processes: int, **how: Any
) -> Run:
    run = Run(f"serve x{processes}", kind, rows, installations, latency_s)
    with tempfile.TemporaryDirectory() as folder, core_process(latency_s) as core:
        db_path = Path(folder) / "plugin.sqlite3"
        port = free_port()
        db = SqliteDatabase(db_path)
        apply_migrations(db.connection)
        sealed = asyncio.run(_seal_all(installations))
        start = seconds_ahead(how.get("ahead_s", 20))
        due = spread_due(start, rows, how["minutes"]) if kind == "spread" else (lambda i: start)
        statements = installation_rows(core.base_url, lambda _p, c: sealed[c], installations)
        statements += list(schedule_rows(rows, installations, due))
        asyncio.run(db.batch([db.prepare(sql).bind(*params) for sql, params in statements]))
        db.close()
        env = development_env(port, core.base_url, SCHEDULE_CLOCK="1")
        vars_file = write_vars(Path(folder) / "vars", **env)
        serve = start_serve(
            db_path, vars_file, port, "--no-cron", "--clock-processes", str(processes)
        )
        output: list[str] = []
        try:
            wait_until_up(port, serve)
            threading.Thread(target=_drain, args=(serve, output), daemon=True).start()
            cpu_before = cpu_seconds(serve.pid)
            last_due = max(due(i) for i in range(rows))
            time.sleep(max(0, last_due / 1000 - time.time()))
            with sqlite3.connect(db_path) as reader:
                while reader.execute(LIVE_SQL).fetchone()[0]:
                    time.sleep(0.1)
            run.busy_seconds = time.time() - start / 1000
            run.cpu_seconds = cpu_seconds(serve.pid) - cpu_before
        finally:
            serve.terminate()
            serve.wait(60)
        with sqlite3.connect(db_path) as reader:
            reader.row_factory = sqlite3.Row
            run.lateness_ms = [r["late"] for r in reader.execute(LATENESS_SQL)]
            run.statuses = {r["k"]: r["n"] for r in reader.execute(STATUS_SQL)}
            run.alarms = [dict(r) for r in reader.execute(ALARMS_SQL)]
        seen = core.stats()
        run.peak_per_installation = max(seen["max_in_flight_by"].values(), default=0)
        run.peak_total = seen["max_in_flight"]
        run.sent_twice = sum(1 for times in seen["keys"].values() if times > 1)
        restarts = [line for line in output if "clock process" in line and "ended" in line]
        if restarts:
            print("".join(restarts), end="")
    return run
