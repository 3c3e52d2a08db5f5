"""Migration 0021 (releases) on a database holding rows of every kind the migrations before it
wrote, on SQLite and on Miniflare's D1: it makes the schedules again, so every row, column,
index, trigger and key must come through, and the new rules hold afterwards."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from scheduling.ports import Database, DatabaseError, Statement
from scheduling.runtimes.cpython.sqlite_d1 import (
    MIGRATIONS_DIR,
    SqliteDatabase,
    _statements,
    apply_migrations,
)

RELEASES = "0021_releases.sql"


async def _drop_everything(db: Database) -> None:
    found = await db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table'"
        " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'"
    ).all()
    names = [str(row["name"]) for row in found.results]
    if names:
        drops = [db.prepare(f'DROP TABLE IF EXISTS "{name}"') for name in names]
        await db.batch([db.prepare("PRAGMA defer_foreign_keys = ON"), *drops])


def _script(path: Path) -> list[str]:
    """One migration file's statements (less a comment after the last `;`, which D1 takes
    for a statement of its own)."""
    return [sql[: sql.rindex(";") + 1] for sql in _statements(path.read_text("utf-8"))]


async def _apply(db: Database, script: list[str]) -> None:
    """One migration file as one batch, as the contract tests' D1 is migrated."""
    await db.batch([db.prepare(sql) for sql in script])


@pytest.fixture(params=["sqlite", pytest.param("d1", marks=pytest.mark.pyodide)])
async def before(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A database migrated up to, not including, 0021 (the contract tests' D1 is made anew
    after: they migrate it again when it holds no table)."""
    earlier = sorted(p for p in MIGRATIONS_DIR.glob("*.sql") if p.name < RELEASES)
    if request.param == "sqlite":
        folder = tmp_path / "earlier"
        folder.mkdir()
        for path in earlier:
            shutil.copy(path, folder)
        database = SqliteDatabase(tmp_path / "plugin.sqlite3")
        apply_migrations(database.connection, folder)
        yield database
        database.close()
        return
    from tests.pyodide_harness.remote_d1 import RemoteD1Database

    d1 = RemoteD1Database(request.getfixturevalue("harness").control_url, database="contract")
    await _drop_everything(d1)
    for script in [_script(path) for path in earlier]:
        await _apply(d1, script)
    try:
        yield d1
    finally:
        await _drop_everything(d1)
        await d1.aclose()


def _row(sid: str, status: str, **more: Any) -> dict[str, Any]:
    waiting = status in ("pending", "retrying")
    row: dict[str, Any] = {
        "id": sid, "installation_id": "ins_1", "content_id": f"cnt_{sid}", "kind": "publish",
        "to_state": "published", "version_id": "ver_1", "workflow_revision": 3, "revision": 1,
        "idempotency_key": f"sched:ins_1:{sid}:r1", "due_at": 1_000, "timezone": "Europe/Paris",
        "local_time": "2026-10-25T02:30", "fold": "later", "status": status,
        "result_code": None, "attempt_count": 0, "next_attempt_at": 1_000 if waiting else None,
        "lease_token": None, "lease_until": None, "requested_by": "usr_1",
        "requested_by_name": "Ada Lovelace-Ünal", "created_at": 1, "updated_at": 2,
        "title_sealed": "v1.sealed",
    }  # fmt: skip
    return {**row, **more}


ROWS = [
    _row("s_pending", "pending", made_stale_by="s_done", made_stale_at=9, kind="unpublish",
         content_id="cnt_s_done"),
    _row("s_retrying", "retrying", attempt_count=2, result_code="unavailable"),
    _row("s_running", "running", attempt_count=1, lease_token="lease", lease_until=70_000),
    _row("s_done", "completed", result_code="transition_applied", attempt_count=1,
         settled_by="lease-x"),
    _row("s_refused", "refused", result_code="retry_exhausted", ended_by="lateness"),
    _row("s_dismissed", "refused", result_code="workflow_conflict", dismissed_by="usr_2",
         dismissed_by_name="Grace", dismissed_at=5),
    _row("s_cancelled", "cancelled", cancelled_by="usr_1", cancelled_by_name="Ada",
         cancelled_at=4),
    _row("s_old", "superseded", title_sealed=None, fold=None),
]  # fmt: skip


def _insert(db: Database, row: dict[str, Any]) -> Statement:
    names, marks = ", ".join(row), ", ".join("?" * len(row))
    return db.prepare(f"INSERT INTO schedules ({names}) VALUES ({marks})").bind(*row.values())


async def _write_rows(db: Database) -> None:
    statements = [
        db.prepare(
            "INSERT INTO installations (id, site_id, base_url, token_sealed, created_at,"
            " token_rotated_at) VALUES ('ins_1', 'site', 'https://cms.example', 'sealed', 0, 0)"
        )
    ]
    statements += [_insert(db, row) for row in ROWS]
    statements += [
        db.prepare(
            "INSERT INTO schedule_attempts (schedule_id, attempt, started_at, finished_at, code,"
            " http_status) VALUES ('s_done', 1, 10, 11, 'transition_applied', 200),"
            " ('s_running', 1, 12, NULL, NULL, NULL)"
        ),
        db.prepare(
            "INSERT INTO notification_endpoints (id, installation_id, url, secret_sealed,"
            " created_at, secret_rotated_at) VALUES ('whe_1', 'ins_1', 'https://h.example', 's',"
            " 1, 1)"
        ),
        db.prepare(
            "INSERT INTO notification_subscriptions VALUES ('whe_1', 'schedule.refused'),"
            " ('whe_1', 'proposal.created')"
        ),
    ]
    await db.batch(statements)


async def _dump(db: Database, columns: list[str]) -> list[tuple[Any, ...]]:
    found = await db.prepare(f"SELECT {', '.join(columns)} FROM schedules ORDER BY id").all()
    return [tuple(row[name] for name in columns) for row in found.results]


async def _names(db: Database, kind: str, table: str) -> set[str]:
    found = (
        await db.prepare(
            "SELECT name FROM sqlite_master WHERE type = ? AND tbl_name = ?"
            " AND name NOT LIKE 'sqlite_%'"
        )
        .bind(kind, table)
        .all()
    )
    return {str(row["name"]) for row in found.results}


async def _columns(db: Database) -> list[str]:
    found = await db.prepare("SELECT name FROM pragma_table_info('schedules')").all()
    return [str(row["name"]) for row in found.results]


async def test_0021_keeps_every_row_column_index_and_trigger_and_adds_the_releases(
    before: Database,
) -> None:
    db = before
    await _write_rows(db)
    columns = await _columns(db)
    kept = await _dump(db, columns)
    indexes = await _names(db, "index", "schedules")
    await _apply(db, _script(MIGRATIONS_DIR / RELEASES))

    assert set(columns) <= set(await _columns(db))  # a column an earlier migration added stays
    assert await _dump(db, columns) == kept
    assert indexes | {"schedules_by_release"} == await _names(db, "index", "schedules")
    assert await _names(db, "trigger", "schedules") == {
        "schedules_made_stale", "schedules_attempt_opened", "releases_line_moves",
        "releases_line_joined", "releases_line_reordered", "releases_purged",
    }  # fmt: skip
    assert (
        await db.prepare("SELECT count(*) AS n FROM pragma_foreign_key_check").all()
    ).results == [{"n": 0}]
    attempts = await db.prepare("SELECT schedule_id FROM schedule_attempts ORDER BY 1").all()
    assert [r["schedule_id"] for r in attempts.results] == ["s_done", "s_running"]
    subscribed = db.prepare("SELECT event_type FROM notification_subscriptions ORDER BY 1")
    assert [r["event_type"] for r in (await subscribed.all()).results] == [
        "proposal.created", "schedule.refused",
    ]  # fmt: skip

    # The rules after it: an attempt still holds its schedule, one live per content and kind
    # (a queued item counts), the new statuses and events go in, a completion marks the other
    # kind's waiting schedule stale.
    with pytest.raises(DatabaseError):
        await db.prepare("DELETE FROM schedules WHERE id = 's_done'").run()
    clash = _row(
        "s_clash", "pending", content_id="cnt_s_retrying", idempotency_key="k2", revision=2
    )
    with pytest.raises(DatabaseError):
        await _insert(db, clash).run()
    await db.prepare(
        "INSERT INTO notification_subscriptions VALUES ('whe_1', 'release.held')"
    ).run()
    await db.prepare(
        "UPDATE schedules SET status = 'held', result_code = 'held_stale', next_attempt_at = NULL"
        " WHERE id = 's_retrying'"
    ).run()
    fresh = _row("s_fresh", "pending", kind="publish", content_id="cnt_s_new", revision=1,
                 idempotency_key="k3")  # fmt: skip
    other = _row("s_other", "pending", kind="unpublish", content_id="cnt_s_new", revision=1,
                 idempotency_key="k4")  # fmt: skip
    await db.batch([_insert(db, fresh), _insert(db, other)])
    await db.prepare(
        "UPDATE schedules SET status = 'completed', next_attempt_at = NULL, updated_at = 77"
        " WHERE id = 's_fresh'"
    ).run()
    marked = await db.prepare(
        "SELECT made_stale_by, made_stale_at FROM schedules WHERE id = 's_other'"
    ).first()
    assert marked == {"made_stale_by": "s_fresh", "made_stale_at": 77}
