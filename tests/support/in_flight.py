"""What a test watches of the runner's traffic, and the faults it meets: the requests each
installation's Dee Wan had in flight at once (`InFlight`, a handler of the outbound port
around another), a Database that yields before every round trip as a remote D1 does
(`Yielding`), and alarm clocks as at-least-once alarms allow (`FaultyClocks`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fake_core.transport import Handler, answered
from scheduling.ports import (
    Clock,
    Database,
    OutboundRequest,
    OutboundResponse,
    Result,
    Row,
    Statement,
)
from scheduling.runtimes.cpython.server import LocalClocks

if TYPE_CHECKING:
    from tests.support.world import World


class InFlight:
    """Notes, per installation, how many transitions were in flight at once (read from the
    Idempotency-Key, `sched:<installation>:…`), and in all; and, per schedule, how many at
    once and whether one left after the plugin had heard it completed."""

    def __init__(self, inner: Handler) -> None:
        self.inner = inner
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.peak_total = 0
        self._keys: dict[str, int] = {}
        self.peak_per_schedule = 0
        self._completed: set[str] = set()
        self.sent_after_completed: list[str] = []

    async def __call__(self, request: OutboundRequest) -> OutboundResponse:
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
            response = await answered(self.inner, request)
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
    D1 does: concurrent runners then really interleave between reading a row and claiming it."""

    def __init__(self, inner: Database) -> None:
        self.inner = inner

    def prepare(self, sql: str) -> YieldingStatement:
        return YieldingStatement(self.inner.prepare(sql))

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        await asyncio.sleep(0)
        return await self.inner.batch(
            [s.inner if isinstance(s, YieldingStatement) else s for s in statements]
        )


class FaultyClocks(LocalClocks):
    """Clocks as at-least-once alarms allow: an alarm dropped (never delivered), one delivered
    twice, one killed mid-alarm."""

    def __init__(self, world: World) -> None:
        super().__init__(world.app, http=lambda: world.app.services.http)
        self.drop: set[str] = set()
        self.twice: set[str] = set()

    def wake(self, installation_id: str, set_for: int) -> None:
        if installation_id in self.drop:
            self.drop.discard(installation_id)
            return
        super().wake(installation_id, set_for)
        if installation_id in self.twice:
            self.twice.discard(installation_id)
            super().wake(installation_id, set_for)

    def kill(self, installation_id: str) -> None:
        """As if the isolate running this clock's alarm died: no settle, no re-arm."""
        clock = self._clocks[installation_id]
        clock.cancel()
        assert clock.ringing is not None
        clock.ringing.cancel()


async def until(clock: Clock, at: int) -> None:
    """Let loop time pass until `at` (epoch ms)."""
    await asyncio.sleep(max(0, at - clock.now_ms()) / 1000)
