"""The app with an in-process queue and consumers (the local runtime's `MemoryQueue`), and
what a test watches of it: each consumer invocation's report, the messages sent, and the
requests each installation's Dee Wan had in flight at once."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Self

from scheduling.app import App
from scheduling.ports import (
    Database,
    HttpClient,
    OutboundRequest,
    OutboundResponse,
    QueueMessage,
    Result,
    Row,
    Statement,
)
from scheduling.runtimes.cpython.memory_queue import MemoryQueue

# The consumer invocation (or tick) a piece of work runs in: each delivery sets its own.
invocation: contextvars.ContextVar[int] = contextvars.ContextVar("invocation", default=0)
_invocations = itertools.count(1)


class Consumers:
    """`app`'s ticks dispatch to a MemoryQueue whose consumers run `app.consume`, each
    delivery as its own invocation (`invocation` names it). Delays are scaled down so tests
    do not wait Queues' seconds."""

    def __init__(
        self,
        app: App,
        *,
        consumers: int = 3,
        max_batch_size: int = 4,
        max_retries: int = 100,
        delay_scale: float = 0.001,
    ) -> None:
        self.app = app
        self.reports: list[dict[str, int]] = []
        self.sent: list[dict[str, Any]] = []  # every message body the producer was given
        self.queue = MemoryQueue(
            [self._consume] * consumers,
            max_batch_size=max_batch_size,
            max_retries=max_retries,
            delay_scale=delay_scale,
        )
        self._send = self.queue.send_batch
        self.queue.send_batch = self._record  # type: ignore[method-assign]
        app.services.queue = self.queue

    async def _record(self, bodies: Sequence[Mapping[str, Any]]) -> None:
        await self._send(bodies)
        self.sent.extend(dict(body) for body in bodies)

    async def _consume(self, messages: Sequence[QueueMessage]) -> None:
        invocation.set(next(_invocations))
        self.reports.append(await self.app.consume(messages))

    async def __aenter__(self) -> Self:
        self.queue.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.queue.stop()

    async def tick(self, at: int) -> dict[str, int]:
        """A tick at `at` (the test clock set there), answered once its consumers are done."""
        clock = self.app.services.clock
        clock.now = at  # type: ignore[attr-defined]
        invocation.set(next(_invocations))
        report = await self.app.tick(at)
        await asyncio.wait_for(self.queue.idle(), timeout=60)
        return report

    def total(self, name: str) -> int:
        return sum(report.get(name, 0) for report in self.reports)


class InFlight:
    """An HttpClient that notes, per installation, how many transitions were in flight at
    once (read from the Idempotency-Key, `sched:<installation>:…`); and, per schedule, how
    many at once and whether one left after the plugin had heard it completed."""

    def __init__(self, inner: HttpClient) -> None:
        self.inner = inner
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.peak_total = 0
        self._keys: dict[str, int] = {}
        self.peak_per_schedule = 0
        self._completed: set[str] = set()
        self.sent_after_completed: list[str] = []

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        key = request.headers.get("idempotency-key", "")
        installation = key.split(":")[1] if key.startswith("sched:") else ""
        if key in self._completed:
            self.sent_after_completed.append(key)
        self.now[installation] = self.now.get(installation, 0) + 1
        self.peak[installation] = max(self.peak.get(installation, 0), self.now[installation])
        self.peak_total = max(self.peak_total, sum(self.now.values()))
        self._keys[key] = self._keys.get(key, 0) + 1
        self.peak_per_schedule = max(self.peak_per_schedule, self._keys[key])
        try:
            response: OutboundResponse = await self.inner.send(request)
        finally:
            self.now[installation] -= 1
            self._keys[key] -= 1
        if response.status == 200:
            self._completed.add(key)
        return response


class YieldingStatement:
    def __init__(self, inner: Statement) -> None:
        self.inner = inner

    def bind(self, *values: Any) -> YieldingStatement:
        return YieldingStatement(self.inner.bind(*values))

    async def all(self) -> Result:
        await asyncio.sleep(0)
        return await self.inner.all()

    async def run(self) -> Result:
        await asyncio.sleep(0)
        return await self.inner.run()

    async def first(self) -> Row | None:
        await asyncio.sleep(0)
        return await self.inner.first()


class Yielding:
    """A Database that hands control to the event loop before every round trip, as a remote
    D1 does: consumers then really interleave between reading a row and claiming it."""

    def __init__(self, inner: Database) -> None:
        self.inner = inner

    def prepare(self, sql: str) -> YieldingStatement:
        return YieldingStatement(self.inner.prepare(sql))

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        await asyncio.sleep(0)
        return await self.inner.batch(
            [s.inner if isinstance(s, YieldingStatement) else s for s in statements]
        )
