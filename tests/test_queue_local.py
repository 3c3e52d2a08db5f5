"""The local runtime's queue behaves like the deployed one: `serve` with QUEUE_CONSUMERS runs
that many consumers fed by the same dispatch, its queue keeps the consumer settings of
wrangler.example.jsonc, and `/__scheduled` answers once the dispatched work is done."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx

from scheduling.runtimes.cpython import memory_queue
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.runtimes.workers.bindings import SEND_QUEUE_BINDING
from scripts.wrangler_config import parse_config
from tests.support.activation import install
from tests.support.app import ADMIN_SECRET, make_app
from tests.support.loopback_core import loopback_core
from tests.support.serve_process import (
    development_env,
    free_port,
    start_serve,
    wait_until_up,
    write_vars,
)
from tests.support.world import insert_due
from tests.support.wrangler_example import EXAMPLE, queue_switched_on


def test_the_example_s_queue_block_declares_the_queue_its_consumer_and_a_dead_letter_queue() -> (
    None
):
    config = parse_config(queue_switched_on(EXAMPLE.read_text("utf-8")))
    queues = config["queues"]
    assert isinstance(queues, dict)
    [producer] = queues["producers"]
    assert producer == {"binding": SEND_QUEUE_BINDING, "queue": "dee-wan-scheduling-sends"}
    [consumer] = queues["consumers"]
    assert consumer["queue"] == producer["queue"]
    assert consumer["dead_letter_queue"] == "dee-wan-scheduling-sends-dead"
    # The local queue keeps the same settings.
    assert consumer["max_batch_size"] == memory_queue.MAX_BATCH_SIZE
    assert consumer["max_batch_timeout"] == memory_queue.MAX_BATCH_TIMEOUT_S
    assert consumer["max_retries"] == memory_queue.MAX_RETRIES
    assert consumer["retry_delay"] == memory_queue.RETRY_DELAY_S
    assert consumer["max_concurrency"] >= 4
    assert config["observability"] == {"enabled": True, "head_sampling_rate": 1}


def test_serve_with_queue_consumers_answers_the_tick_once_they_have_sent(tmp_path: Path) -> None:
    port = free_port()
    db_path = tmp_path / "plugin.sqlite3"
    with loopback_core(delay_s=0.05) as core:
        env = development_env(port, core.base_url, QUEUE_CONSUMERS="3")
        prepared = SqliteDatabase(db_path)
        apply_migrations(prepared.connection)
        app = make_app(prepared, SystemClock(), env=env)
        for n in range(3):
            asyncio.run(install(app, f"ins_q{n}", core.base_url))
        minute = (int(time.time()) // 60 + 1) * 60_000  # the next minute, a tick ahead
        for n in range(3):
            for i in range(20):
                asyncio.run(insert_due(prepared, f"ins_q{n}", f"cnt_{n}_{i}", minute))
        prepared.close()
        vars_file = write_vars(tmp_path / "vars", **env)
        process = start_serve(db_path, vars_file, port, "--no-cron")
        try:
            wait_until_up(port, process)
            answer = httpx.get(
                f"http://127.0.0.1:{port}/__scheduled",
                params={"cron": "* * * * *", "time": str(minute)},
                timeout=60,
            )
            keys_when_answered = list(core.keys)
        finally:
            process.terminate()
            output, _ = process.communicate(timeout=10)
    assert process.returncode == 0
    assert answer.status_code == 200, answer.text
    report = answer.json()["report"]
    assert (report["dispatched"], report["sends"]) == (60, 0)
    # Answered only once the consumers had sent everything the tick dispatched.
    assert sorted(keys_when_answered) == sorted(
        f"sched:ins_q{n}:sch_cnt_{n}_{i}:r1" for n in range(3) for i in range(20)
    )
    assert "3 queue consumers" in output
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    consumed = [line for line in lines if line["event"] == "runner_consume"]
    assert sum(line["completed"] for line in consumed) == 60
    assert ADMIN_SECRET not in output
