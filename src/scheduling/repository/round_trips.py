"""What the runner's stores send to D1, counted: each operation is one round trip (one D1
batch), its multi-row statements chunked under D1's bound-parameter limit. One `RoundTrips`
per invocation carries its leases, outbox and record: the counts are its report's and budget's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from scheduling.limits import ENDPOINT_IDS, StatementShape
from scheduling.ports import Database, LimitReached, Result, Statement

T = TypeVar("T")


class RoundTrips:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.statements = 0
        self.round_trips = 0

    async def send(self, statements: Sequence[Statement]) -> list[Result]:
        """One D1 batch. A batch the platform refused (`LimitReached`) ran nothing and is not
        counted."""
        return await self.record(lambda: statements, len(statements))

    async def record(
        self, build: Callable[[], Sequence[Statement]], statements: int
    ) -> list[Result]:
        """One round trip carrying `statements` statements that `build` makes once the trip is
        counted: the invocation's record counts the trip that carries it."""
        self.statements += statements
        self.round_trips += 1
        made = build()
        assert len(made) == statements
        try:
            return await self.db.batch(made)
        except LimitReached:
            self.statements -= statements
            self.round_trips -= 1
            raise

    def values(
        self,
        template: str,
        shape: StatementShape,
        fixed: tuple[object, ...],
        rows: Sequence[tuple[object, ...]],
    ) -> list[Statement]:
        """`template` once per chunk of `rows` (its `{values}` list), each statement under
        D1's parameter limit."""
        width = shape.width
        assert len(fixed) == shape.fixed and all(len(row) == width for row in rows)
        statements = []
        for chunk in _chunks(rows, shape.rows_per_statement()):
            first = len(fixed) + 1
            values = ", ".join(
                "(" + ", ".join(f"?{first + i * width + j}" for j in range(width)) + ")"
                for i in range(len(chunk))
            )
            params = [value for row in chunk for value in row]
            statements.append(self.db.prepare(template.format(values=values)).bind(*fixed, *params))
        return statements

    def ids(self, template: str, fixed: tuple[object, ...], ids: Iterable[str]) -> list[Statement]:
        """`template` once per chunk of `ids` (its `{ids}` list), under the parameter limit."""
        ordered = sorted(set(ids))
        statements = []
        for chunk in _chunks(ordered, ENDPOINT_IDS.rows_per_statement()):
            first = len(fixed) + 1
            listed = ", ".join(f"?{first + i}" for i in range(len(chunk)))
            statements.append(self.db.prepare(template.format(ids=listed)).bind(*fixed, *chunk))
        return statements


def _chunks(rows: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]
