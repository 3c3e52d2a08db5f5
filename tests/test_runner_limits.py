"""Platform limits hit at run time are not failures: with D1 and fetch refusing past 50 calls
in an invocation (Workers Free, where the operator never set the 50s), the runner stops
claiming, hands back what it claimed and did not send (status restored, attempt not
counted), records `limit_reached`, and the rest drains over later invocations; a delivery
refused the same way goes back to waiting and is delivered once by a later tick."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.platform_limits import limit, limited_tick
from tests.support.webhooks import Receiver, add_endpoint, signed_by, with_receivers
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
    # An hour's cap, so that fifty a minute can send all of it.
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


async def subscribed(world: World, receiver: Receiver, events: tuple[str, ...]) -> tuple[Any, str]:
    """An installation with one endpoint (the receiver) hearing of `events`; and its secret."""
    with_receivers(world, receiver)
    installation = await world.install()
    manage = await world.browser_for(installation, content_id=None)
    return installation, await add_endpoint(manage, installation.id, receiver.url, events)


async def deliveries(world: World) -> list[dict[str, Any]]:
    result = await world.db.prepare("SELECT * FROM webhook_deliveries ORDER BY id").all()
    return result.results


async def test_a_delivery_the_platform_refuses_is_handed_back_and_sent_once_later(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock)
    receiver = Receiver()
    installation, secret = await subscribed(world, receiver, ("schedule.completed",))
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 25, due, "lim")
    limit(world.app, subrequests=25)  # the transitions use all of the first invocation's
    first = await limited_tick(world.app, due)
    assert (first["completed"], first["delivery_events"]) == (25, 25)
    assert (first["platform_limit"], first["delivery_sends"], first["deliveries_delivered"]) == (
        1,
        0,
        0,
    )
    assert first["deliveries_handed_back"] == 20  # the first batch claimed; the rest still waits
    assert receiver.received == []
    stored = await deliveries(world)
    assert {(d["status"], d["attempt_count"]) for d in stored} == {("waiting", 0)}
    assert all(d["next_attempt_at"] <= due + MINUTE for d in stored)
    # Later invocations stay below what the first met, and deliver the rest once each.
    for n in (1, 2):
        report = await limited_tick(world.app, due + n * MINUTE)
        assert report["platform_limit"] == 0
        assert report["delivery_sends"] <= 25
    assert len(receiver.received) == 25
    assert set(Counter(d.id for d in receiver.received).values()) == {1}
    assert all(signed_by(secret, d) for d in receiver.received)
    stored = await deliveries(world)
    assert {(d["status"], d["attempt_count"]) for d in stored} == {("delivered", 1)}
