"""Platform limits hit at run time are not failures: with D1 and fetch refusing past 50 calls
in an invocation (Workers Free, where the operator never set the 50s), the runner stops
claiming, hands back what it claimed and did not send (status restored, attempt not
counted), records `limit_reached`, and the rest drains over later invocations."""

from __future__ import annotations

from collections import Counter

import pytest

from scheduling.runner.consume import retry_delay_s
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.platform_limits import limit, limited_tick
from tests.support.queue import Consumers
from tests.support.world import MINUTE, World, bulk_due

FREE = 50


async def live(world: World) -> int:
    found = await world.db.prepare(
        "SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'retrying', 'running')"
    ).first()
    return int((found or {})["n"])


async def statuses(world: World) -> dict[str, int]:
    result = await world.db.prepare(
        "SELECT status || ':' || coalesce(result_code, '') AS k, count(*) AS n"
        " FROM schedules GROUP BY k"
    ).all()
    return {r["k"]: r["n"] for r in result.results}


def applied(world: World) -> Counter[str | None]:
    return Counter(entry.idempotency_key for entry in world.core.state.log)


async def burst(world: World, rows: int, due: int) -> None:
    for n in range(4):
        await bulk_due(world, await world.install(), rows // 4, due, f"b{n}_")


async def test_inline_ticks_at_free_limits_drain_a_1000_row_burst_without_a_failed_tick(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    # An hour's cap, so that fifty a minute can send all of it (see the fan-out test below
    # for the same burst within the default 15 minutes).
    world = World(db, clock, env=base_env(MAX_LATENESS_MS="3600000"))
    due = clock.now + MINUTE
    await burst(world, 1000, due)
    limit(world.app, queries=FREE, subrequests=FREE)
    ticks = []
    for minute in range(40):
        ticks.append(await limited_tick(world.app, due + minute * MINUTE))  # never raises
        if not await live(world):
            break
    assert await statuses(world) == {"completed:transition_applied": 1000}
    assert set(applied(world).values()) == {1}  # each change applied once
    # The first tick meets the limit at its 51st send and hands back the rest of its claims;
    # the later ones budget below the 50 it met (whole batches of 20: 40 sends each).
    first, *later = ticks
    assert (first["platform_limit"], first["sends"], first["handed_back"]) == (1, FREE, 10)
    assert [t["platform_limit"] for t in later] == [0] * len(later)
    # Each but the last stopped before it was done: the rest waited for the next tick.
    assert [t["limit_reached"] for t in ticks] == [1] * (len(ticks) - 1) + [0]
    assert [t["sends"] for t in later] == [40] * 23 + [30]
    assert sum(t["unsettled"] for t in ticks) == 0  # D1 still had room to hand back
    # A handed-back claim counts no attempt and leaves no attempt row.
    attempts = await world.db.prepare(
        "SELECT max(attempt_count) AS most, (SELECT count(*) FROM schedule_attempts) AS rows"
        " FROM schedules"
    ).first()
    assert attempts == {"most": 1, "rows": 1000}


async def test_queue_consumers_at_free_limits_drain_a_1000_row_burst_within_minutes(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock)
    due = clock.now + MINUTE
    await burst(world, 1000, due)
    limit(world.app, queries=FREE, subrequests=FREE)
    async with Consumers(world.app, consumers=4, max_batch_size=10) as consumers:
        tick = await consumers.tick(due)
        assert tick["dispatched"] == 1000
        for minute in range(1, 5):
            if not await live(world):
                break
            await consumers.tick(due + minute * MINUTE)
    ended = await statuses(world)
    # Consumers running at once may each meet D1's limit before one of them has learnt it:
    # what they had out then cannot be settled, and is sent again with its key after the
    # lease (Dee Wan replays it). Nothing is lost and nothing applied twice.
    replayed = ended.pop("completed:idempotent_replay", 0)
    assert ended == {"completed:transition_applied": 1000 - replayed}
    assert replayed <= consumers.total("unsettled")
    assert set(applied(world).values()) == {1}
    reports = consumers.reports
    assert max(r["sends"] for r in reports) <= FREE
    assert max(r["d1_statements"] for r in reports) <= FREE
    # A consumer meets a limit; later invocations of this process budget below it, each
    # leaving the rest to its messages' next delivery. (Whether the first to meet it still
    # had claims to hand back depends on where its batches stood: the hand-back itself is
    # the single invocation's test above.)
    assert consumers.total("platform_limit") >= 1
    assert consumers.total("retried") > 0
    assert len(reports) >= 1000 // FREE
    # Claims D1 would not let a consumer settle stay leased, and count under their
    # installation's cap, until their lease runs out: this test's clock stands still within
    # a tick, so the messages held back behind them can only run out of retries (on Workers
    # the lease ends within their retries, which back off). Otherwise none is dead-lettered;
    # either way, nothing is lost (every row completed, above).
    if consumers.total("unsettled") == 0:
        assert consumers.queue.stats.dead_letters == []
    assert all(t <= 2 * MINUTE for t in await lateness(world))  # the queue's reason to be


async def lateness(world: World) -> list[int]:
    result = await world.db.prepare(
        "SELECT a.started_at - s.due_at AS late FROM schedule_attempts a"
        " JOIN schedules s ON s.id = a.schedule_id"
    ).all()
    return [r["late"] for r in result.results]


@pytest.mark.parametrize("queries", [12, 25])
async def test_when_d1_refuses_mid_tick_the_claims_it_cannot_settle_are_reclaimed_with_their_key(
    db: SqliteDatabase, clock: FakeClock, queries: int
) -> None:
    """D1 refusing is the one limit that also refuses the hand-back: those claims stay
    leased, as after a crash, and a later tick claims them again with the same key."""
    world = World(db, clock)
    due = clock.now + MINUTE
    await burst(world, 100, due)
    limit(world.app, queries=queries)
    ticks = []
    for minute in range(30):
        ticks.append(await limited_tick(world.app, due + minute * MINUTE))
        if not await live(world):
            break
    ended = await statuses(world)
    # A claim sent and left unsettled is sent again with its key: Dee Wan replays it.
    assert set(ended) <= {"completed:transition_applied", "completed:idempotent_replay"}
    assert sum(ended.values()) == 100
    assert set(applied(world).values()) == {1}
    assert all(t["d1_statements"] <= queries for t in ticks)
    assert sum(t["platform_limit"] for t in ticks) >= 1
    assert sum(t["unsettled"] for t in ticks) >= 1


class Message:
    """A queue message as the consumer gets it, delivered `attempts` times so far."""

    def __init__(self, message_id: str, body: dict[str, object], attempts: int) -> None:
        self.id, self.body, self.attempts = message_id, body, attempts
        self.acked = False
        self.retried_after: int | None = None

    def ack(self) -> None:
        self.acked = True

    def retry(self, delay_s: int) -> None:
        self.retried_after = delay_s


async def test_a_consumer_serves_the_message_delivered_most_often_first_then_backs_off(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """With room for one message's rows, the one delivered seven times goes before a fresh
    one listed ahead of it; the one left comes back after a second, and a message retried
    for the 25th time after three (a second more for each ten deliveries, at most ten)."""
    room = {"MAX_SENDS_PER_TICK": "20", "MAX_ROWS_PER_BATCH": "20"}
    world = World(db, clock, env=base_env(**room, MAX_IN_FLIGHT_PER_INSTALLATION="20"))
    due = clock.now + MINUTE
    bodies = []
    for prefix in ("fresh_", "old_"):
        installation = await world.install()
        await bulk_due(world, installation, 20, due, prefix)
        ids = [f"sch_{prefix}{i}" for i in range(20)]
        bodies.append({"v": 1, "at": due, "sent": due, "ids": {installation.id: ids}})
    clock.now = due
    fresh, old = Message("m-fresh", bodies[0], 1), Message("m-old", bodies[1], 7)
    report = await world.app.consume([fresh, old])
    assert report["sends"] == 20
    assert (old.acked, old.retried_after) == (True, None)
    assert (fresh.acked, fresh.retried_after) == (False, 1)
    again = Message("m-again", bodies[0], 25)
    await world.app.consume([again, Message("m-old", bodies[1], 1)])
    assert (again.acked, again.retried_after) == (True, None)  # served first, done
    assert retry_delay_s(1) == retry_delay_s(10) == 1
    assert (retry_delay_s(11), retry_delay_s(25), retry_delay_s(100)) == (2, 3, 10)
