"""The same store-level tests on SqliteDatabase and on Miniflare's D1 through the Workers adapter.

`any_db` (tests/conftest.py) runs each test twice: `[sqlite]` and `[d1]` (marked
`pyodide`). Each test works in a table of its own, dropped afterwards, because
the D1 database is shared by the whole test session.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from scheduling.ports import Database, DatabaseError
from tests.pyodide_harness.remote_d1 import RemoteD1Database

# The largest |int| that Pyodide hands to JS as a number (see remote_d1.py).
LARGEST_EXACT_INT = 2**53 - 2


@pytest.fixture
async def table(any_db: Database) -> AsyncIterator[str]:
    name = f"parity_{uuid.uuid4().hex[:12]}"
    await any_db.prepare(
        f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, label TEXT NOT NULL UNIQUE,"
        " n INTEGER, note TEXT) STRICT"
    ).run()
    yield name
    await any_db.prepare(f"DROP TABLE {name}").run()


async def test_the_database_has_the_migrations(any_db: Database) -> None:
    rows = (
        await any_db.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?) ORDER BY name"
        )
        .bind("schedule_attempts", "schedules")
        .all()
    ).results
    assert rows == [{"name": "schedule_attempts"}, {"name": "schedules"}]


async def test_insert_returning_gives_the_row_none_as_null_and_meta(
    any_db: Database, table: str
) -> None:
    result = (
        await any_db.prepare(
            f"INSERT INTO {table} (label, n, note) VALUES (?, ?, ?) RETURNING id, label, n, note,"
            " typeof(note) AS note_type"
        )
        .bind("a", 7, None)
        .run()
    )
    [row] = result.results
    assert row == {"id": row["id"], "label": "a", "n": 7, "note": None, "note_type": "null"}
    assert result.meta.changes == 1
    assert result.meta.last_row_id == row["id"]
    missing = await any_db.prepare(f"SELECT id FROM {table} WHERE label = ?").bind("b").first()
    assert missing is None


@pytest.mark.parametrize(
    "value", [0, -1, 2**31, 1_782_900_000_000, LARGEST_EXACT_INT, -LARGEST_EXACT_INT]
)
async def test_ints_up_to_the_js_limit_stay_exact_ints(
    any_db: Database, table: str, value: int
) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('x', ?)").bind(value).run()
    row = await any_db.prepare(f"SELECT n, typeof(n) AS type FROM {table}").first()
    assert row == {"n": value, "type": "integer"}
    assert type(row["n"]) is int


async def test_an_int_past_the_js_limit_is_refused_by_d1_at_bind(
    any_db: Database, table: str
) -> None:
    statement = any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('x', ?)")
    if not isinstance(any_db, RemoteD1Database):
        await statement.bind(LARGEST_EXACT_INT + 1).run()  # SQLite takes any int64
        return
    # The Workers adapter maps D1's refusal at bind() to the port's DatabaseError.
    with pytest.raises(DatabaseError, match="D1_TYPE_ERROR") as raised:
        await statement.bind(LARGEST_EXACT_INT + 1).run()
    assert not raised.value.constraint


async def test_update_from_values_returning_reports_the_rows_it_changed(
    any_db: Database, table: str
) -> None:
    await any_db.batch(
        [
            any_db.prepare(f"INSERT INTO {table} (label, n) VALUES (?, 0)").bind(label)
            for label in ("a", "b", "c")
        ]
    )
    result = (
        await any_db.prepare(
            f"UPDATE {table} SET n = v.column2 FROM (VALUES (?, ?), (?, ?)) AS v"
            f" WHERE {table}.label = v.column1 RETURNING {table}.label, {table}.n"
        )
        .bind("a", 10, "c", 30)
        .run()
    )
    assert sorted(result.results, key=lambda row: row["label"]) == [
        {"label": "a", "n": 10},
        {"label": "c", "n": 30},
    ]
    assert result.meta.changes == 2


async def test_batch_items_carry_their_own_returning_rows_and_changes(
    any_db: Database, table: str
) -> None:
    first, second, update = await any_db.batch(
        [
            any_db.prepare(f"INSERT INTO {table} (label) VALUES (?) RETURNING label").bind("a"),
            any_db.prepare(f"INSERT INTO {table} (label) VALUES (?) RETURNING label").bind("b"),
            any_db.prepare(f"UPDATE {table} SET n = 1 RETURNING label").bind(),
        ]
    )
    assert (first.results, first.meta.changes) == ([{"label": "a"}], 1)
    assert (second.results, second.meta.changes) == ([{"label": "b"}], 1)
    assert sorted(row["label"] for row in update.results) == ["a", "b"]
    assert update.meta.changes == 2


async def test_a_constraint_error_rolls_the_whole_batch_back(any_db: Database, table: str) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('a', 1)").run()
    with pytest.raises(DatabaseError) as raised:
        await any_db.batch(
            [
                any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('b', 2)"),
                any_db.prepare(f"UPDATE {table} SET n = 100"),
                any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('a', 3)"),  # UNIQUE
            ]
        )
    assert raised.value.constraint is True
    assert "UNIQUE" in str(raised.value)
    rows = (await any_db.prepare(f"SELECT label, n FROM {table} ORDER BY label").all()).results
    assert rows == [{"label": "a", "n": 1}]


async def test_a_failed_batch_says_where_it_failed(any_db: Database, table: str) -> None:
    await any_db.prepare(f"INSERT INTO {table} (label, n) VALUES ('a', 1)").run()
    first = f"INSERT INTO {table} (label, n) VALUES ('b', 2)"
    failing = f"INSERT INTO {table} (label, n) VALUES ('a', 3)"
    with pytest.raises(DatabaseError) as raised:
        await any_db.batch(
            [
                any_db.prepare(first),
                any_db.prepare(f"UPDATE {table} SET n = 100"),
                any_db.prepare(failing),
            ]
        )
    if isinstance(any_db, RemoteD1Database):
        # D1 answers SQLite's message alone, without the failing statement's index.
        assert f"in a batch of 3 statements, starting: {first}" in str(raised.value)
    else:
        assert f"in: {failing}" in str(raised.value)
    with pytest.raises(DatabaseError) as alone:
        await any_db.batch([any_db.prepare(failing)])
    assert f"in: {failing}" in str(alone.value)


async def test_a_syntax_error_is_a_database_error_but_no_constraint(any_db: Database) -> None:
    with pytest.raises(DatabaseError) as raised:
        await any_db.prepare("SELEC 1").all()
    assert raised.value.constraint is False
