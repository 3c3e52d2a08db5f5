"""D1 on sqlite3, with D1's semantics (rows as dicts, `meta.changes`, a batch as one
transaction, foreign keys enforced; `round_trips` counts what would each be one D1 round
trip), and the package's migrations applied as `wrangler d1 migrations apply` applies them,
recorded in wrangler's own `d1_migrations` table, so either tool knows what the other did.

A file is in WAL mode, so whoever reads it meanwhile (a test, a developer's `sqlite3` shell)
never holds up the server's writes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scheduling.ports import DatabaseError, Meta, Result, Row, Statement

BUSY_WAIT_S = 10.0
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"  # scheduling/migrations


class SqliteStatement:
    def __init__(self, db: SqliteDatabase, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._db = db
        self.sql = sql
        self.params = params

    def bind(self, *values: Any) -> SqliteStatement:
        return SqliteStatement(self._db, self.sql, values)

    async def all(self) -> Result:
        return self._db.execute_one(self)

    run = all

    async def first(self) -> Row | None:
        result = self._db.execute_one(self)
        return result.results[0] if result.results else None


class SqliteDatabase:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        # A write that finds another writer holding the lock waits for it, up to BUSY_WAIT_S.
        self.connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_WAIT_S
        )
        self.connection.row_factory = sqlite3.Row
        self.connection.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self.connection.execute("PRAGMA journal_mode = WAL")
            # In WAL, NORMAL loses no integrity, only the last commits on a power cut.
            self.connection.execute("PRAGMA synchronous = NORMAL")
        self._lock = threading.Lock()
        self.round_trips = 0

    def prepare(self, sql: str) -> SqliteStatement:
        return SqliteStatement(self, sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        own = [stmt for stmt in statements if isinstance(stmt, SqliteStatement)]
        if len(own) != len(statements):
            raise TypeError("batch() takes statements prepared on this database")
        self.round_trips += 1
        with self._lock:
            try:
                self.connection.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise DatabaseError(f"{exc} in: BEGIN IMMEDIATE") from exc
            try:
                results = [self._execute(stmt) for stmt in own]
            except BaseException:
                self.connection.execute("ROLLBACK")
                raise
            self.connection.execute("COMMIT")
            return results

    def execute_one(self, statement: SqliteStatement) -> Result:
        self.round_trips += 1
        with self._lock:
            return self._execute(statement)

    def _execute(self, statement: SqliteStatement) -> Result:
        try:
            cursor = self.connection.execute(statement.sql, statement.params)
            rows = [dict(row) for row in cursor.fetchall()] if cursor.description else []
        except sqlite3.IntegrityError as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}", constraint=True) from exc
        except sqlite3.Error as exc:
            raise DatabaseError(f"{exc} in: {_first_line(statement.sql)}") from exc
        changes = cursor.rowcount if cursor.rowcount > 0 else 0
        return Result(rows, Meta(changes=changes, last_row_id=cursor.lastrowid))

    def close(self) -> None:
        self.connection.close()


def _first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]


_TABLE = """
CREATE TABLE IF NOT EXISTS d1_migrations(
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT UNIQUE,
    applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)
"""


class MigrationsMissing(RuntimeError):
    """No migration files where they must be: applying none would only fail later."""


def apply_migrations(conn: sqlite3.Connection, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations in name order; returns the names applied now. None to apply
    at all raises `MigrationsMissing`: a database without its tables fails far from the cause."""
    files = sorted(directory.glob("*.sql")) if directory.is_dir() else []
    if not files:
        raise MigrationsMissing(
            f"no migrations in {directory}: the package was installed without its"
            " migrations/*.sql (package data)"
        )
    conn.execute(_TABLE)
    done = {row[0] for row in conn.execute("SELECT name FROM d1_migrations")}
    applied = []
    for path in files:
        if path.name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(path.read_text("utf-8")):
                conn.execute(statement)
            conn.execute("INSERT INTO d1_migrations (name) VALUES (?)", (path.name,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        applied.append(path.name)
    return applied


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (sqlite3 knows where each ends)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in current.splitlines()
    ):
        raise ValueError("migration ends with an incomplete statement")
    return statements
