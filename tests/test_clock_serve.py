"""`serve` with SCHEDULE_CLOCK=1 and the cron silenced (`--no-cron`): its clocks, armed from
D1 when it starts, send at the due second; killed with SIGKILL while an alarm has requests
out, the next `serve` finds what was left in D1 and its watchdog sends each row once more at
most, never past the per-installation cap and never before its second."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import httpx

from scheduling.domain.schedules import WATCHDOG_GRACE_MS
from tests.support.loopback_core import LoopbackCore, loopback_core
from tests.support.serve_process import (
    development_env,
    free_port,
    prepare_database,
    start_serve,
    wait_until_up,
    write_vars,
)

CAP = 4
ROWS = 10
SECOND = 1_000
LEASE_MS = 25_000  # the least MAX_ROWS_PER_BATCH=6 allows


def rows(db_path: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db_path) as connection:
        connection.row_factory = sqlite3.Row
        return connection.execute(
            "SELECT s.id, s.status, s.due_at, s.idempotency_key, a.started_at FROM schedules s"
            " LEFT JOIN schedule_attempts a ON a.schedule_id = s.id ORDER BY s.id, a.attempt"
        ).fetchall()


def kill_with_an_alarm_out(db_path: Path, vars_file: Path, port: int, core: LoopbackCore) -> None:
    """The first `serve`, killed with SIGKILL once its clock's alarm has its cap's worth of
    requests out; returns once those requests ended at the core."""
    first = start_serve(db_path, vars_file, port, "--no-cron")
    try:
        wait_until_up(port, first)
        deadline = time.monotonic() + 30
        while core.in_flight < CAP and time.monotonic() < deadline:
            time.sleep(0.05)
        assert core.in_flight == CAP  # its clock's alarm has its cap's worth out
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    left = Counter(r["status"] for r in rows(db_path))
    assert left == {"running": CAP, "pending": ROWS - CAP}
    # The dead process's requests end at the core (after its 4 s) long before their
    # 25 s lease would let anyone reclaim them; the development tick below jumps ahead
    # of the wall clock, so it waits for that here rather than overlap them.
    deadline = time.monotonic() + 30
    while core.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    assert core.in_flight == 0


def test_killed_mid_alarm_and_restarted_each_row_is_sent_once_more_at_most(
    tmp_path: Path,
) -> None:
    port = free_port()
    db_path = tmp_path / "plugin.sqlite3"
    with loopback_core(delay_s=4.0) as core:
        env = development_env(
            port,
            core.base_url,
            SCHEDULE_CLOCK="1",
            MAX_IN_FLIGHT_PER_INSTALLATION=str(CAP),
            MAX_ROWS_PER_BATCH="6",
            LEASE_MS=str(LEASE_MS),
            TICK_BUDGET_MS="20000",
        )
        due = (int(time.time()) + 6) * SECOND
        rows_due = {f"cnt_{i}": due for i in range(ROWS)}
        prepare_database(db_path, env, core.base_url, ("ins_k",), rows_due)
        vars_file = write_vars(tmp_path / "vars", **env)

        kill_with_an_alarm_out(db_path, vars_file, port, core)

        second = start_serve(db_path, vars_file, port, "--no-cron")
        try:
            wait_until_up(port, second)
            # The watchdog, at the first instant the killed claims are overdue past its grace
            # (a development tick may run ahead of the wall clock).
            at = due + LEASE_MS + WATCHDOG_GRACE_MS + SECOND
            answer = httpx.get(
                f"http://127.0.0.1:{port}/__scheduled",
                params={"cron": "* * * * *", "time": str(at)},
                timeout=60,
            )
            assert answer.status_code == 200, answer.text
            deadline = time.monotonic() + 60
            while any(r["status"] != "completed" for r in rows(db_path)):
                assert time.monotonic() < deadline, rows(db_path)
                time.sleep(0.2)
        finally:
            second.terminate()
            output, _ = second.communicate(timeout=20)

    ended = rows(db_path)
    assert {r["status"] for r in ended} == {"completed"}
    assert all(r["started_at"] >= r["due_at"] for r in ended)  # none before its second
    sent = Counter(core.keys)
    assert set(sent) == {r["idempotency_key"] for r in ended}
    # The killed claims went twice (the answer was lost with the process), the rest once.
    assert sorted(sent.values()) == [1] * (ROWS - CAP) + [2] * CAP
    assert core.max_in_flight_by == {"ins_k": CAP}  # never past the cap
    assert "alarm clocks armed from D1 (installations with something live): 1" in output
