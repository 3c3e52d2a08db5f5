"""Apply the package's `migrations/*.sql` the way `wrangler d1 migrations apply` does.

The files live in `scheduling/migrations/`, the one copy: wrangler reads them
there (`migrations_dir` in wrangler.example.jsonc) and they ship in the wheel as
package data, so an installed package applies them as a checkout does.

Applied files are recorded in `d1_migrations` (wrangler's table and columns),
so applying twice is a no-op and a database migrated by either tool is
recognised by the other.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"  # scheduling/migrations

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
