"""Database port over a D1 binding, as the `workers` SDK's env wrapper hands it over.

The SDK already converts D1 results to Python dicts and `None` to SQL NULL;
this adapter turns them into the port's `Result` and D1 errors into
`DatabaseError` (or `LimitReached`, when the invocation's queries are used up), so no JS
shape leaks past here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyodide.ffi import JsException

from scheduling.ports import DatabaseError, LimitReached, Meta, Result, Row, Statement
from scheduling.runtimes.workers.platform_limits import limit_of


def _result(raw: Any) -> Result:
    meta = raw.get("meta") or {}
    rows = [dict(row) for row in raw.get("results") or []]
    return Result(
        rows, Meta(changes=int(meta.get("changes") or 0), last_row_id=meta.get("last_row_id"))
    )


def _shown(sql: str) -> str:
    return " ".join(sql.split())[:120]


def _error(exc: Exception, where: str) -> DatabaseError | LimitReached:
    """The port's error for a D1 failure: `LimitReached` when the invocation has used up its
    queries (the call did nothing), else a `DatabaseError` saying where."""
    message = str(exc)
    limit = limit_of(message)
    if limit is not None:
        return limit
    constraint = "constraint failed" in message.lower()
    return DatabaseError(f"{message} {where}", constraint=constraint)


def _in(sql: str) -> str:
    return f"in: {_shown(sql)}"


def _in_batch(statements: Sequence[D1Statement]) -> str:
    """Where a batch failed. D1's error is SQLite's message alone: it does not say which
    statement failed (Miniflare's D1 and workerd's client alike), so name the batch."""
    if not statements:
        return "in an empty batch"
    if len(statements) == 1:
        return _in(statements[0].sql)
    return f"in a batch of {len(statements)} statements, starting: {_shown(statements[0].sql)}"


class D1Statement:
    def __init__(self, stmt: Any, sql: str) -> None:
        self.js_statement = stmt
        self.sql = sql

    def bind(self, *values: Any) -> D1Statement:
        try:
            return D1Statement(self.js_statement.bind(*values), self.sql)
        except JsException as exc:  # e.g. D1_TYPE_ERROR for a value D1 cannot bind
            raise _error(exc, _in(self.sql)) from None

    async def all(self) -> Result:
        try:
            return _result(await self.js_statement.all())
        except JsException as exc:
            raise _error(exc, _in(self.sql)) from None

    async def run(self) -> Result:
        try:
            return _result(await self.js_statement.run())
        except JsException as exc:
            raise _error(exc, _in(self.sql)) from None

    async def first(self) -> Row | None:
        try:
            row = await self.js_statement.first()
        except JsException as exc:
            raise _error(exc, _in(self.sql)) from None
        return dict(row) if row is not None else None


class D1Database:
    def __init__(self, binding: Any) -> None:
        self._binding = binding

    def prepare(self, sql: str) -> D1Statement:
        return D1Statement(self._binding.prepare(sql), sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        own = [stmt for stmt in statements if isinstance(stmt, D1Statement)]
        if len(own) != len(statements):
            raise TypeError("batch() takes statements prepared on this database")
        try:
            raw = await self._binding.batch([stmt.js_statement for stmt in own])
        except JsException as exc:
            raise _error(exc, _in_batch(own)) from None
        return [_result(item) for item in raw]
