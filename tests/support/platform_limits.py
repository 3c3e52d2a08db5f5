"""Workers' per-invocation limits, played at the ports: a Database and the outbound port's
handler that refuse with `LimitReached` past N calls in one invocation, as the Workers
adapters do when D1 answers "Too many API requests by single Worker invocation." or `fetch`
"Too many subrequests by single Worker invocation."
(src/scheduling/runtimes/workers/bindings.py).

The invocation is `invocation`: each tick a test runs through `limited_tick`, and each alarm,
is its own.
"""

from __future__ import annotations

import contextvars
import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fake_core.transport import MockTransport, answered
from scheduling.app import App
from scheduling.ports import (
    Database,
    LimitReached,
    OutboundRequest,
    OutboundResponse,
    Result,
    Row,
    Statement,
)

# The invocation a piece of work runs in: each sets its own.
invocation: contextvars.ContextVar[int] = contextvars.ContextVar("invocation", default=0)
_ticks = itertools.count(1_000_000)


class LimitedStatement:
    def __init__(self, db: LimitedDatabase, inner: Statement) -> None:
        self.db = db
        self.inner = inner

    def bind(self, *values: Any) -> LimitedStatement:
        return LimitedStatement(self.db, self.inner.bind(*values))

    async def all(self) -> Result:
        self.db.count(1)
        return await self.inner.all()

    async def run(self) -> Result:
        self.db.count(1)
        return await self.inner.run()

    async def first(self) -> Row | None:
        self.db.count(1)
        return await self.inner.first()


class LimitedDatabase:
    """Refuses a call that would take the invocation past `queries` statements (each
    statement of a batch counts, as the platform notes advise to assume)."""

    def __init__(self, inner: Database, queries: int) -> None:
        self.inner = inner
        self.queries = queries
        self.used: Counter[int] = Counter()
        self.refused = 0

    def count(self, statements: int) -> None:
        key = invocation.get()
        if key and self.used[key] + statements > self.queries:
            self.refused += 1
            raise LimitReached("d1")
        self.used[key] += statements

    def prepare(self, sql: str) -> LimitedStatement:
        return LimitedStatement(self, self.inner.prepare(sql))

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        self.count(len(statements))
        inner = [s.inner if isinstance(s, LimitedStatement) else s for s in statements]
        return await self.inner.batch(inner)


def limit(app: App, *, queries: int | None = None, subrequests: int | None = None) -> None:
    """Give `app` Workers Free's limits (or others) per invocation."""
    services = app.services
    if queries is not None:
        services.db = LimitedDatabase(services.db, queries)
    if subrequests is not None:
        assert isinstance(services.http, MockTransport)
        inner, sent = services.http.handler, Counter[int]()

        async def limited(request: OutboundRequest) -> OutboundResponse:
            """Refuses the request past `subrequests` in one invocation, before it is sent."""
            key = invocation.get()
            if key and sent[key] >= subrequests:
                raise LimitReached("subrequests")
            sent[key] += 1
            return await answered(inner, request)

        services.http.handler = limited


async def limited_tick(app: App, at: int) -> dict[str, int]:
    """One tick as its own invocation, the test clock set to `at`."""
    app.services.clock.now = at  # type: ignore[attr-defined]
    invocation.set(next(_ticks))
    return await app.tick(at)
