"""A D1-shaped database over sqlite3, with D1's semantics.

- Rows come back as dicts, `meta.changes` counts rows written.
- `batch` is one transaction: every statement or none.
- Foreign keys are enforced, as D1 always does.
`round_trips` counts calls that would each be one D1 round trip.

Several processes may write the same file (`serve --clock-processes`): it is in WAL mode
with synchronous=NORMAL, and a statement that finds another writer holding the lock waits
on the event loop and tries again (up to `BUSY_WAIT_S`), rather than blocking the loop in
SQLite's own busy wait, so the process's other alarms and requests go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from scheduling.ports import DatabaseError, Meta, Result, Row, Statement

T = TypeVar("T")

# How long a statement waits for another writer before it fails (sqlite3's own default
# wait was 10 s), and its waits between tries: the first short, then doubling to the last.
BUSY_WAIT_S = 10.0
FIRST_BUSY_PAUSE_S = 0.001
LAST_BUSY_PAUSE_S = 0.025


class _Busy(Exception):
    """Another connection holds the lock; nothing of the statement or batch was done."""


class SqliteStatement:
    def __init__(self, db: SqliteDatabase, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._db = db
        self.sql = sql
        self.params = params

    def bind(self, *values: Any) -> SqliteStatement:
        return SqliteStatement(self._db, self.sql, values)

    async def all(self) -> Result:
        return await self._db.execute_one(self)

    async def run(self) -> Result:
        return await self._db.execute_one(self)

    async def first(self) -> Row | None:
        result = await self._db.execute_one(self)
        return result.results[0] if result.results else None


def create_private(path: Path) -> None:
    """Create `path` empty and owner-only (0600) if it does not exist, before SQLite opens it.

    The database holds CSRF tokens, names and sealed tokens. SQLite creates its `-wal` and
    `-shm` files with the database file's mode, so they are 0600 too.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class SqliteDatabase:
    def __init__(self, path: str | Path = ":memory:", *, busy_wait_s: float = BUSY_WAIT_S) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            create_private(Path(path))
        # timeout=0: SQLite answers "busy" at once and `_when_free` waits on the event loop.
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            # Switching to WAL takes the lock once, whoever else is starting: wait for it.
            _blocking_when_free(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
            # In WAL, NORMAL loses no integrity, only the last commits on a power cut.
            self._conn.execute("PRAGMA synchronous = NORMAL")
        self.busy_wait_s = busy_wait_s
        self._lock = threading.Lock()
        self.round_trips = 0

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def prepare(self, sql: str) -> SqliteStatement:
        return SqliteStatement(self, sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        own = [stmt for stmt in statements if isinstance(stmt, SqliteStatement)]
        if len(own) != len(statements):
            raise TypeError("batch() takes statements prepared on this database")
        self.round_trips += 1
        return await self._when_free(lambda: self._batch(own))

    def _batch(self, statements: list[SqliteStatement]) -> list[Result]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                _raise_busy(exc)
                raise
            try:
                results = [self._execute(stmt) for stmt in statements]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return results

    async def execute_one(self, statement: SqliteStatement) -> Result:
        self.round_trips += 1
        return await self._when_free(lambda: self._execute_alone(statement))

    def _execute_alone(self, statement: SqliteStatement) -> Result:
        with self._lock:
            return self._execute(statement)

    async def _when_free(self, attempt: Callable[[], T]) -> T:
        """`attempt()`, tried again after a pause on the event loop while another writer
        holds the lock, until `busy_wait_s` has passed."""
        pause, deadline = FIRST_BUSY_PAUSE_S, time.monotonic() + self.busy_wait_s
        while True:
            try:
                return attempt()
            except _Busy as busy:
                if time.monotonic() >= deadline:
                    waited = f"database is locked (waited {self.busy_wait_s:g} s)"
                    raise DatabaseError(waited) from busy
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_BUSY_PAUSE_S)

    def _execute(self, statement: SqliteStatement) -> Result:
        try:
            cursor = self._conn.execute(statement.sql, statement.params)
            rows = [dict(row) for row in cursor.fetchall()] if cursor.description else []
        except sqlite3.OperationalError as exc:
            _raise_busy(exc)
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}") from exc
        except sqlite3.IntegrityError as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}", constraint=True) from exc
        except sqlite3.Error as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}") from exc
        changes = cursor.rowcount if cursor.rowcount > 0 else 0
        return Result(rows, Meta(changes=changes, last_row_id=cursor.lastrowid))

    def close(self) -> None:
        self._conn.close()


def _raise_busy(exc: sqlite3.OperationalError) -> None:
    if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        raise _Busy(str(exc)) from exc


def _blocking_when_free(attempt: Callable[[], Any]) -> None:
    """For what runs before any event loop (opening the file): wait as sqlite3 would."""
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        try:
            attempt()
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(FIRST_BUSY_PAUSE_S * 10)


def _first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]
