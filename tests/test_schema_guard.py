"""Issue 45, item 19: the downgrade guard. Code older than its database (migrations applied
that it does not know, listed in wrangler's `d1_migrations`) runs no runner, so it writes no
row a newer schema reads differently, and says so on /healthz, /admin and in the log;
`scripts/deploy` refuses to deploy such code over such a database.

On both runtimes where the test takes `runtime`; in-process otherwise.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduling.repository.history import NEWEST_MIGRATION
from scheduling.runtimes.cpython.sqlite_d1 import MIGRATIONS_DIR
from scripts import deploy
from tests.support.app import ADMIN_SECRET, FakeClock, call
from tests.support.runtimes import Runtime
from tests.support.world import World, schedule, tick_at

FUTURE = "9999_from_newer_code.sql"
Answer = tuple[int, str]
COUNT = "SELECT count(*) AS n FROM tick_history"


def test_the_code_knows_its_newest_migration() -> None:
    """The guard compares the database's list with this name: a new migration moves it."""
    assert max(path.name for path in MIGRATIONS_DIR.glob("*.sql")) == NEWEST_MIGRATION


async def test_code_older_than_its_database_runs_no_runner_and_says_so(runtime: Runtime) -> None:
    await runtime.execute("INSERT INTO d1_migrations (name) VALUES (?)", FUTURE)
    try:
        before = await runtime.rows(COUNT)
        # Variables of its own: a fresh isolate, which has checked nothing yet (an isolate
        # trusts what it found for a minute).
        with runtime.vars(MAX_ATTEMPTS="9"):
            with pytest.raises(Exception):  # noqa: B017, PT011 - each runtime raises its own
                await runtime.tick(runtime.now_ms(), asked_now=True)
            assert await runtime.rows(COUNT) == before  # not even its failure was written
            async with runtime.http() as http:
                health = await http.get("/healthz")
                status = await http.get("/admin/status", headers=runtime.operator)
            assert (health.status_code, health.json()) == (
                503,
                {"status": "code_behind_database"},
            )
            assert status.json()["code_behind_database"] == [FUTURE]
        said = runtime.log_text()
        assert '"event":"runner_refused_code_behind_database"' in said
        assert FUTURE in said
    finally:
        await runtime.execute("DELETE FROM d1_migrations WHERE name = ?", FUTURE)
    with runtime.vars(MAX_ATTEMPTS="9"):
        await runtime.tick(runtime.now_ms(), asked_now=True)  # the database known again
    assert (await runtime.rows(COUNT))[0]["n"] == before[0]["n"] + 1


async def test_the_operator_page_says_why_the_runner_does_not_run_and_sends_wait(
    world: World, clock: FakeClock
) -> None:
    installation = await world.install()
    due = await schedule(world, installation, "cnt_en", in_minutes=2)
    await world.db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(FUTURE).run()
    with pytest.raises(Exception, match="does not know"):
        await tick_at(world, due["due_at"])
    sql = "SELECT status FROM schedules WHERE id = ?"
    assert await world.db.prepare(sql).bind(due["id"]).first() == {"status": "pending"}
    basic = base64.b64encode(f"op:{ADMIN_SECRET}".encode()).decode()
    page = await call(world.app, "GET", "/admin", headers={"authorization": f"Basic {basic}"})
    text = " ".join(page.body.decode().split())
    assert "Not running: the database has migrations this code does not know" in text
    assert FUTURE in text


def test_deploy_refuses_code_older_than_the_remote_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deploy migrates, then uploads: code that lacks a migration the remote database
    already has is stopped before either step."""
    ran: list[list[str]] = []
    monkeypatch.setattr(deploy, "missing", lambda *, check_uv: [])
    monkeypatch.setattr(deploy, "install_tools", lambda: None)
    monkeypatch.setattr(deploy, "uv_problem", lambda uv: None)
    monkeypatch.setattr(deploy, "database_name", lambda: "dee-wan-scheduling")
    monkeypatch.setattr(deploy, "_run", lambda command, env=None: ran.append(list(command)))
    known = sorted(path.name for path in MIGRATIONS_DIR.glob("*.sql"))
    monkeypatch.setattr(deploy, "remote_migrations", lambda name, env: [*known, FUTURE])
    assert deploy.main([]) == 1
    assert ran == []
    said = capsys.readouterr().err
    assert f"the remote database has migrations this code does not know ({FUTURE})" in said
    # A database this code knows all of (or one behind it) is migrated, then deployed.
    monkeypatch.setattr(deploy, "remote_migrations", lambda name, env: known[:-1])
    assert deploy.main([]) == 0
    assert ran[0][:4] == ["npx", "wrangler", "d1", "migrations"]


def test_the_remote_list_is_read_with_wrangler_and_a_new_database_has_none() -> None:
    answers = {
        "listed": (0, json.dumps([{"results": [{"name": "0001_initial.sql"}], "success": True}])),
        "new": (1, "✘ [ERROR] no such table: d1_migrations: SQLITE_ERROR"),
    }
    for case, (code, output) in answers.items():
        asked: list[list[str]] = []
        run = answering(asked, code, output)
        names = deploy.remote_migrations("dee-wan-scheduling", {}, run=run)
        assert names == (["0001_initial.sql"] if case == "listed" else [])
        assert asked[0][:6] == [
            "npx",
            "wrangler",
            "d1",
            "execute",
            "dee-wan-scheduling",
            "--remote",
        ]


def answering(asked: list[list[str]], code: int, output: str) -> Callable[[list[str]], Answer]:
    """wrangler as a stand-in: notes each command, answers `code` and `output`."""

    def run(command: list[str]) -> Answer:
        asked.append(command)
        return code, output

    return run
