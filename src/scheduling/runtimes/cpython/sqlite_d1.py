"""A D1-shaped database over sqlite3, with D1's semantics.

- Rows come back as dicts, `meta.changes` counts rows written.
- `batch` is one transaction: every statement or none.
- Foreign keys are enforced, as D1 always does.
`round_trips` counts calls that would each be one D1 round trip.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduling.ports import DatabaseError, Meta, Result, Row, Statement


class SqliteStatement:
    def __init__(self, db: SqliteDatabase, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._db = db
        self.sql = sql
        self.params = params

    def bind(self, *values: Any) -> SqliteStatement:
        return SqliteStatement(self._db, self.sql, values)

    async def all(self) -> Result:
        return self._db.execute_one(self)

    async def run(self) -> Result:
        return self._db.execute_one(self)

    async def first(self) -> Row | None:
        result = self._db.execute_one(self)
        return result.results[0] if result.results else None


def create_private(path: Path) -> None:
    """Create `path` empty and owner-only (0600) if it does not exist, before SQLite opens it.

    The database holds CSRF tokens, names and sealed tokens. SQLite creates its `-wal` and
    `-shm` files with the database file's mode, so they are 0600 too.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class SqliteDatabase:
    def __init__(self, path: str | Path = ":memory:") -> None:
        if str(path) != ":memory:":
            create_private(Path(path))
        self._conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=10.0
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys = ON")
        if str(path) != ":memory:":
            self._conn.execute("PRAGMA journal_mode = WAL")
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
        with self._lock:
            self.round_trips += 1
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                results = [self._execute(stmt) for stmt in own]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return results

    def execute_one(self, statement: SqliteStatement) -> Result:
        with self._lock:
            self.round_trips += 1
            return self._execute(statement)

    def _execute(self, statement: SqliteStatement) -> Result:
        try:
            cursor = self._conn.execute(statement.sql, statement.params)
            rows = [dict(row) for row in cursor.fetchall()] if cursor.description else []
        except sqlite3.IntegrityError as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}", constraint=True) from exc
        except sqlite3.Error as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}") from exc
        changes = cursor.rowcount if cursor.rowcount > 0 else 0
        return Result(rows, Meta(changes=changes, last_row_id=cursor.lastrowid))

    def close(self) -> None:
        self._conn.close()


def _first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]
