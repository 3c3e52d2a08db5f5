"""Several processes write the same SQLite file (`serve --clock-processes`): a statement that
finds another writer holding the lock waits on the event loop, so the process's other work
goes on meanwhile, and it is written once the lock is free."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from scheduling.ports import DatabaseError
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase

CREATE = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"


def holding_the_writer_lock(path: Path) -> sqlite3.Connection:
    """Another process's connection in the middle of a write."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO notes (body) VALUES ('theirs')")
    return other


def test_a_write_waits_for_the_lock_without_holding_up_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "plugin.sqlite3"
    db = SqliteDatabase(path)
    db.connection.execute(CREATE)
    other = holding_the_writer_lock(path)

    async def other_work_then_their_commit() -> None:
        # Runs only if the waiting writes leave the loop free: it is what ends their wait.
        await asyncio.sleep(0.05)
        other.execute("COMMIT")

    async def scenario() -> None:
        released = asyncio.create_task(other_work_then_their_commit())
        await db.prepare("INSERT INTO notes (body) VALUES (?)").bind("one").run()
        await db.batch([db.prepare("INSERT INTO notes (body) VALUES (?)").bind("two")])
        await released

    asyncio.run(scenario())
    rows = db.connection.execute("SELECT body FROM notes ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["theirs", "one", "two"]
    db.close()
    other.close()


def test_a_lock_held_past_the_wait_fails_the_statement_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "plugin.sqlite3"
    db = SqliteDatabase(path, busy_wait_s=0.05)
    db.connection.execute(CREATE)
    other = holding_the_writer_lock(path)
    insert = db.prepare("INSERT INTO notes (body) VALUES (?)").bind("mine")
    with pytest.raises(DatabaseError, match="database is locked"):
        asyncio.run(db.batch([insert]))
    other.execute("ROLLBACK")
    assert db.connection.execute("SELECT count(*) FROM notes").fetchone()[0] == 0
    db.close()
    other.close()


def test_the_file_is_in_wal_with_synchronous_normal(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "plugin.sqlite3")
    assert db.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.connection.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    db.close()
