"""A `scheduling.ports.Database` in CPython whose every call runs on the harness's D1.

Each `all`/`first`/`run`/`batch` is one `POST /__harness/d1`: inside Pyodide, the
Worker's own adapter (`scheduling.runtimes.workers.adapters.D1Database`, over the env
binding as the `workers` SDK wraps it) runs the statement on Miniflare's D1. So
store code can be tested on `SqliteDatabase` and on real D1 semantics with the
same test (see the `any_db` fixture in tests/conftest.py).

Values cross as JSON, so `bind` takes None, bool, int, float and str. Inside the
Worker, Pyodide turns an int with |value| <= 2**53 - 2 into a JS number (exact);
from 2**53 - 1 (`Number.MAX_SAFE_INTEGER`) on it becomes a BigInt, which D1
refuses at bind time with `D1_TYPE_ERROR` (the adapter's `DatabaseError`). D1 binds
every number as a REAL (`typeof(?)` is 'real': a bound division is not whole) and
answers numbers as JS numbers: an INTEGER above 2**53 reads back rounded, and a REAL
with no fraction (2.0) reads back as the int 2. Anything else the adapter lets escape
is raised here as `WorkerRaised`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeGuard

import httpx

from scheduling.ports import DatabaseError, Meta, Result, Row, Statement

JSON_PARAM_TYPES = (type(None), bool, int, float, str)


class WorkerRaised(Exception):
    """The Worker's adapter raised something other than `DatabaseError` (e.g. a JsException).

    The real Worker would see that exception escape the Database port.
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name


class RemoteD1Statement:
    def __init__(self, db: RemoteD1Database, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._db = db
        self.sql = sql
        self.params = params

    def bind(self, *values: Any) -> RemoteD1Statement:
        for value in values:
            if not isinstance(value, JSON_PARAM_TYPES):
                raise TypeError(f"RemoteD1 binds None, bool, int, float or str, not {type(value)}")
        return RemoteD1Statement(self._db, self.sql, values)

    def to_json(self) -> dict[str, Any]:
        return {"sql": self.sql, "params": list(self.params)}

    async def all(self) -> Result:
        return (await self._db.call("all", [self]))[0]

    async def run(self) -> Result:
        return (await self._db.call("run", [self]))[0]

    async def first(self) -> Row | None:
        answer = await self._db.request("first", [self])
        row: Row | None = answer["row"]
        return row


class RemoteD1Database:
    """The harness's D1 behind `control_url` (`Harness.control_url`), as a Database port:
    the Worker's own (`database="plugin"`), or the one only the store-contract tests use
    (`"contract"`: empty until they migrate it)."""

    def __init__(
        self, control_url: str, *, database: str = "plugin", timeout_s: float = 60.0
    ) -> None:
        self.control_url = control_url
        self.database = database
        self.timeout_s = timeout_s
        self.round_trips = 0
        # One client for the calls of one test (one event loop): making a client costs ~20 ms
        # (its TLS context), more than the call itself.
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def prepare(self, sql: str) -> RemoteD1Statement:
        return RemoteD1Statement(self, sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        """A statement prepared elsewhere goes as such: the Worker's adapter refuses it."""
        return await self.call("batch", statements)

    async def call(self, op: str, statements: Sequence[Statement]) -> list[Result]:
        answer = await self.request(op, statements)
        return [
            Result(
                item["results"],
                Meta(changes=item["meta"]["changes"], last_row_id=item["meta"]["last_row_id"]),
            )
            for item in answer["results"]
        ]

    def _owns(self, statement: Statement) -> TypeGuard[RemoteD1Statement]:
        return isinstance(statement, RemoteD1Statement) and statement._db is self

    def _client_now(self) -> httpx.AsyncClient:
        """This event loop's client: each test runs on a loop of its own, and a client's
        connections belong to the loop that opened them."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(base_url=self.control_url, timeout=self.timeout_s)
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = None

    async def request(self, op: str, statements: Sequence[Statement]) -> dict[str, Any]:
        """One round trip; raises DatabaseError or WorkerRaised as the Worker's adapter did."""
        self.round_trips += 1
        payload = {
            "op": op,
            "statements": [
                stmt.to_json() if self._owns(stmt) else {"foreign": True} for stmt in statements
            ],
            "database": self.database,
        }
        response = await self._client_now().post("/__harness/d1", json=payload)
        if response.status_code != 200:
            raise RuntimeError(f"/__harness/d1: {response.status_code} {response.text}")
        answer: dict[str, Any] = response.json()
        error = answer.get("error")
        if error is None:
            return answer
        if error["type"] == "DatabaseError":
            raise DatabaseError(error["message"], constraint=error["constraint"])
        if error["type"] == "TypeError":  # a misuse of the port, as the adapter raised it
            raise TypeError(error["message"])
        raise WorkerRaised(error["type"], error["message"])


# wrangler's record of the migrations applied (its table and columns).
_APPLIED_TABLE = """CREATE TABLE d1_migrations(
    id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE,
    applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"""


async def contract_database(control_url: str) -> RemoteD1Database:
    """The harness's contract D1, migrated when it holds no table yet (each file one batch, the
    statements split as the CPython runtime splits them, less a comment after the last `;`,
    which D1 takes for a statement of its own) and emptied of rows (and statistics) on every
    call: each store test starts from the same empty, migrated, never-analysed database as on
    SQLite."""
    from scheduling.runtimes.cpython.sqlite_d1 import MIGRATIONS_DIR, _statements

    db = RemoteD1Database(control_url, database="contract")
    listed = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table'"
        " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'"
    )
    tables = [str(row["name"]) for row in (await listed.all()).results]
    if not tables:
        # Each file recorded as wrangler records it: the downgrade guard reads the list.
        await db.batch([db.prepare(_APPLIED_TABLE)])
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            statements = _statements(path.read_text("utf-8"))
            await db.batch(
                [
                    *(db.prepare(sql[: sql.rindex(";") + 1]) for sql in statements),
                    db.prepare("INSERT INTO d1_migrations (name) VALUES (?)").bind(path.name),
                ]
            )
        tables = [str(row["name"]) for row in (await listed.all()).results]
    await db.batch(
        [
            db.prepare("PRAGMA defer_foreign_keys = ON"),
            *(db.prepare(f'DELETE FROM "{name}"') for name in tables),
            db.prepare("DROP TABLE IF EXISTS sqlite_stat1"),  # a test's ANALYZE, forgotten
        ]
    )
    return db
