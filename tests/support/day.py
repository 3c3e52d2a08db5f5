"""A day of the runner on a fake clock, for the operator's views (issue 21).

In one in-process world (the plugin on SQLite, the fake Dee Wan) a tick runs every minute:
a burst of 120 schedules at minute 60 that one tick cannot send within its budget, a Dee
Wan that refuses every connection from minute 125 to 127 (its schedule retried until it
answers), a stale pin refused at minute 150, a tick that fails at minute 200, a 10-minute
gap in the cron from minute 300 (with work due in it), and a last tick delivered 20 s late.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import pytest

from fake_core.transport import answered
from scheduling.ports import (
    DatabaseError,
    OutboundRequest,
    OutboundResponse,
    Result,
    Statement,
    TransportError,
)
from scheduling.repository.leases import DUE_SQL
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import START_MS, FakeClock, base_env
from tests.support.world import MINUTE, World, bulk_due, tick_at

SECOND = 1_000
CAP_MS = 5 * MINUTE  # MAX_LATENESS_MS in this world: the gap's first schedule goes past it
BURST = 120
DOWN = (125, 128)  # Dee Wan refuses every connection from minute 125 to 127 included
STALE = 150
FAILED = 200
GAP = (300, 310)  # no tick from minute 300 to 309 included
DAY_MINUTES = 24 * 60
LATE_LAST_TICK_MS = 20 * SECOND


def minute(m: int, start: int = START_MS) -> int:
    return start + m * MINUTE


class FailingDatabase:
    """The database, whose due-row query fails while `armed` (a disk error in one tick)."""

    def __init__(self, inner: SqliteDatabase) -> None:
        self.inner = inner
        self.armed = False

    def prepare(self, sql: str) -> Statement:
        return self.inner.prepare(sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        if self.armed and any(getattr(s, "sql", "") == DUE_SQL for s in statements):
            raise DatabaseError("disk I/O error")
        return await self.inner.batch(statements)


def day_world(db: SqliteDatabase, start: int = START_MS, **env: str) -> World:
    """The world of the day, its clock at `start` (a whole minute)."""
    world = World(db, FakeClock(start), env=base_env(MAX_LATENESS_MS=str(CAP_MS), **env))
    core = world.http.handler

    async def dee_wan(request: OutboundRequest) -> OutboundResponse:
        """The fake Dee Wan, taking half a second of the test clock per transition it
        answers, and unreachable from minute DOWN[0] to DOWN[1]."""
        if "/transitions" in request.url:
            now = world.clock.now_ms()
            if minute(DOWN[0], start) <= now < minute(DOWN[1], start):
                raise TransportError("connection refused")
            world.clock.advance(SECOND // 2)
        return await answered(core, request)

    world.http.handler = dee_wan
    world.app.services.db = FailingDatabase(db)
    return world


Hook = Callable[[int], Awaitable[None]]


async def play_day(
    world: World,
    start: int = START_MS,
    *,
    minutes: int = DAY_MINUTES,
    before: Hook | None = None,
    after: Hook | None = None,
) -> int:
    """Schedule the day's work, then tick each minute (`before` and `after` each tick, with
    its minute). Returns the number of ticks run."""
    shop, blog = await world.install(), await world.install()
    await bulk_due(world, shop, BURST, minute(60, start), "burst")
    await bulk_due(world, blog, 1, minute(DOWN[0], start), "down")
    await bulk_due(world, shop, 1, minute(STALE, start), "stale")
    world.core.state.edit("stale0")  # a new version: the pin is stale when it falls due
    await bulk_due(world, shop, 1, minute(302, start), "gaplate")  # 8 min late at 310: past cap
    await bulk_due(world, shop, 1, minute(307, start), "gapok")  # 3 min late at 310: sent
    await bulk_due(world, shop, 1, minute(2000, start), "later")  # tomorrow: stays pending
    failing = world.app.services.db
    assert isinstance(failing, FailingDatabase)
    ticks = 0
    for m in range(minutes):
        if GAP[0] <= m < GAP[1]:
            continue
        if before is not None:
            await before(m)
        if m == FAILED:
            failing.armed = True
            with pytest.raises(DatabaseError):
                await tick_at(world, minute(m, start))
            failing.armed = False
        elif m == DAY_MINUTES - 1:  # the last one, delivered late
            world.clock.now = minute(m, start) + LATE_LAST_TICK_MS
            await world.app.tick(minute(m, start))
        else:
            await tick_at(world, minute(m, start))
        ticks += 1
        if after is not None:
            await after(m)
    return ticks
