"""D1 on sqlite3: a D1-shaped database with D1's semantics, and the package's migrations
applied the way `wrangler d1 migrations apply` applies them.

- Rows come back as dicts, `meta.changes` counts rows written.
- `batch` is one transaction: every statement or none.
- Foreign keys are enforced, as D1 always does.
`round_trips` counts calls that would each be one D1 round trip.

A file is in WAL mode, so whoever reads it meanwhile (a test, a benchmark, a developer's
`sqlite3` shell) never holds up the server's writes; a write that finds another writer
holding the lock waits for it, up to `BUSY_WAIT_S`.

The migrations live in `scheduling/migrations/`, the one copy: wrangler reads them there
(`migrations_dir` in wrangler.example.jsonc) and they ship in the wheel as package data.
Applied files are recorded in `d1_migrations` (wrangler's table and columns), so applying
twice is a no-op and a database migrated by either tool is recognised by the other.
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
        self.path = str(path)
        if self.path != ":memory:":
            create_private(Path(path))
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_WAIT_S
        )
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode = WAL")
            # In WAL, NORMAL loses no integrity, only the last commits on a power cut.
            self._conn.execute("PRAGMA synchronous = NORMAL")
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
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise DatabaseError(f"{exc} in: BEGIN IMMEDIATE") from exc
            try:
                results = [self._execute(stmt) for stmt in own]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return results

    def execute_one(self, statement: SqliteStatement) -> Result:
        self.round_trips += 1
        with self._lock:
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
    """Apply pending migrations in name order; returns the names applied now.

    A missing directory, or one without a single `.sql` file, raises
    `MigrationsMissing`: a database without its tables fails later with "no such
    table", far from the cause.
    """
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
