"""`serve --clock-processes N`: with SCHEDULE_CLOCK=1 the installations' alarm clocks run in
N child processes, each the clocks of a fixed set of installations, on serve's SQLite file.
Each schedule leaves once, never before its second, whichever process keeps its clock; a
killed clock process is started again and its installations' schedules still leave; the
processes end with serve, even when serve is killed with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from scheduling.__main__ import cpu_count, parser
from scheduling.runtimes.cpython.clock_processes import owner_of
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.loopback_core import LoopbackCore, loopback_core
from tests.support.serve_process import (
    development_env,
    free_port,
    prepare_database,
    start_serve,
    wait_until_up,
    write_vars,
)
from tests.support.world import insert_due

SECOND = 1_000
# Two installations kept by each of two processes.
INSTALLATIONS = ("ins_a", "ins_b", "ins_d", "ins_e")


def test_the_installations_here_are_shared_by_both_processes() -> None:
    assert sorted(owner_of(i, 2) for i in INSTALLATIONS) == [0, 0, 1, 1]


def test_the_option_defaults_to_the_cpu_count_and_takes_0_to_256() -> None:
    serve = ["serve", "--db", "x.sqlite3", "--vars", "x.vars"]
    assert parser().parse_args(serve).clock_processes == cpu_count()
    assert parser().parse_args([*serve, "--clock-processes", "0"]).clock_processes == 0
    assert parser().parse_args([*serve, "--clock-processes", "256"]).clock_processes == 256


@pytest.mark.parametrize("value", ["-1", "257", "two", "1.5", "", "٣", "9" * 5000])
def test_the_option_refuses_anything_else_in_one_line(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["serve", "--db", "x", "--vars", "y", "--clock-processes", value])
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "--clock-processes" in error
    assert "is not a number of processes (0-256)" in error


def test_the_help_says_what_the_option_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--clock-processes N with SCHEDULE_CLOCK=1, run the installations' alarm clocks" in (
        help_text
    )
    assert f"({cpu_count()}: the CPU count; 0 or 1: in the server's process)" in help_text


# -- through serve ---------------------------------------------------------------------------


def rows(db_path: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db_path) as connection:
        connection.row_factory = sqlite3.Row
        return connection.execute(
            "SELECT s.id, s.installation_id, s.status, s.due_at, s.idempotency_key, a.started_at"
            " FROM schedules s LEFT JOIN schedule_attempts a ON a.schedule_id = s.id"
            " ORDER BY s.id, a.attempt"
        ).fetchall()


def add_due(db_path: Path, installation_id: str, content_id: str, due_at: int) -> None:
    """A row written by another connection, as a create's would be."""
    db = SqliteDatabase(db_path)
    asyncio.run(insert_due(db, installation_id, content_id, due_at))
    db.close()


def clock_processes(serve_pid: int) -> dict[int, int]:
    """index -> pid of serve's clock processes running now."""
    found = {}
    for pid in Path(f"/proc/{serve_pid}/task/{serve_pid}/children").read_text().split():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if b"scheduling.runtimes.cpython.clock_process" in command:
            found[int(command[command.index(b"--index") + 1])] = int(pid)
    return found


def ended(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # ended, not yet reaped by its new parent


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def all_completed(db_path: Path) -> bool:
    return all(r["status"] == "completed" for r in rows(db_path))


@contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[int, Path, LoopbackCore, subprocess.Popen[str]]]:
    """`serve --no-cron --clock-processes 2` over installations INSTALLATIONS, nothing due."""
    port = free_port()
    db_path = tmp_path / "plugin.sqlite3"
    with loopback_core(delay_s=0.0) as core:
        env = development_env(port, core.base_url, SCHEDULE_CLOCK="1")
        prepare_database(db_path, env, core.base_url, INSTALLATIONS)
        vars_file = write_vars(tmp_path / "vars", **env)
        process = start_serve(db_path, vars_file, port, "--no-cron", "--clock-processes", "2")
        try:
            wait_until_up(port, process)
            yield port, db_path, core, process
        finally:
            if process.poll() is None:
                process.terminate()
            process.communicate(timeout=30)


def assert_each_sent_once_never_early(db_path: Path, core: LoopbackCore) -> None:
    ended_rows = rows(db_path)
    assert {r["status"] for r in ended_rows} == {"completed"}
    assert all(r["started_at"] >= r["due_at"] for r in ended_rows)  # none before its second
    sent = Counter(core.keys)
    assert set(sent) == {r["idempotency_key"] for r in ended_rows}
    assert set(sent.values()) == {1}


def test_two_clock_processes_send_each_installation_on_its_second_once(tmp_path: Path) -> None:
    with serving(tmp_path) as (port, db_path, core, process):
        children = clock_processes(process.pid)
        assert sorted(children) == [0, 1]
        # Written after serve started: only the watchdog's tick tells their clocks, each
        # through the process that keeps it.
        due = (int(time.time()) + 4) * SECOND
        for n, installation in enumerate(INSTALLATIONS):
            add_due(db_path, installation, f"cnt_{n}", due)
            add_due(db_path, installation, f"cnt_{n}_later", due + SECOND)
        answer = httpx.get(
            f"http://127.0.0.1:{port}/__scheduled", params={"cron": "* * * * *"}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        wait_for(lambda: all_completed(db_path), "every row sent")
        process.terminate()  # as Ctrl-C: serve closes its clock processes' pipes
        output, _ = process.communicate(timeout=30)
        assert process.returncode == 0
        wait_for(lambda: all(ended(pid) for pid in children.values()), "clock processes ended")
    assert_each_sent_once_never_early(db_path, core)
    assert {r["installation_id"] for r in rows(db_path)} == set(INSTALLATIONS)
    with sqlite3.connect(db_path) as connection:
        [moved] = connection.execute(
            "SELECT clocks_rearmed FROM tick_history WHERE kind = 'tick'"
        ).fetchone()
    assert moved == len(INSTALLATIONS)  # each clock was told, and answered that it moved
    assert "an alarm clock per installation in 2 clock processes" in output
    assert "clock process 0 of 2: 0 installation(s) armed from D1" in output
    assert "clock process 1 of 2: 0 installation(s) armed from D1" in output


def test_a_killed_clock_process_starts_again_and_its_installations_still_send(
    tmp_path: Path,
) -> None:
    kept_by_0 = [i for i in INSTALLATIONS if owner_of(i, 2) == 0]
    with serving(tmp_path) as (_port, db_path, core, process):
        before = clock_processes(process.pid)
        os.kill(before[0], signal.SIGKILL)
        due = (int(time.time()) + 3) * SECOND
        for n, installation in enumerate(kept_by_0):
            add_due(db_path, installation, f"cnt_{n}", due)
        # Started again after its pause, it arms its installations from D1.
        wait_for(lambda: all_completed(db_path), "the killed process's installations sent")
        after = clock_processes(process.pid)
        assert after[0] != before[0]
        assert after[1] == before[1]  # the other process went on

        # serve killed outright: its clock processes see their input close and end.
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        wait_for(lambda: all(ended(pid) for pid in after.values()), "clock processes ended")
        output, _ = process.communicate(timeout=30)
    assert_each_sent_once_never_early(db_path, core)
    assert {r["installation_id"] for r in rows(db_path)} == set(kept_by_0)
    assert "clock process 0 ended (exit code -9)" in output
    assert "clock process 0 of 2: 2 installation(s) armed from D1" in output
