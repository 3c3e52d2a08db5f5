"""The tick with a queue: it dispatches what is due as messages, and consumer invocations
claim, send and settle it by the same compare-and-set, each with its own slots, no
installation past MAX_IN_FLIGHT_PER_INSTALLATION, every message acknowledged only after what
it named is settled."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import Counter
from typing import Any

import pytest

from fake_core import Fault
from scheduling.runner import messages
from scheduling.runtimes.cpython.memory_queue import Delivered, MemoryQueue, _Stored
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import OPERATOR, FakeClock, base_env, call
from tests.support.queue import Consumers, InFlight
from tests.support.world import MINUTE, World, bulk_due, row, sends, until_sent


@pytest.fixture
def world(db: SqliteDatabase, clock: FakeClock) -> World:
    return World(db, clock)


async def statuses(world: World) -> dict[str, int]:
    result = await world.db.prepare(
        "SELECT status, count(*) AS n FROM schedules GROUP BY status"
    ).all()
    return {r["status"]: r["n"] for r in result.results}


def applied_once(world: World) -> bool:
    """Dee Wan applied each schedule's change exactly once."""
    counts = Counter(entry.idempotency_key for entry in world.core.state.log)
    return set(counts.values()) == {1}


async def test_the_tick_sends_nothing_itself_and_consumers_send_each_row_once(
    world: World,
) -> None:
    installations = [await world.install() for _ in range(4)]
    due = world.clock.now + MINUTE
    for n, installation in enumerate(installations):
        await bulk_due(world, installation, 15, due, f"i{n}_")
    world.core.faults.set_latency(0.005)
    async with Consumers(world.app, consumers=3) as consumers:
        tick = await consumers.tick(due)
    assert (tick["sends"], tick["claimed"], tick["dispatched"]) == (0, 0, 60)
    assert tick["messages"] == 3  # 20 rows a message (MAX_ROWS_PER_TICK)
    assert await statuses(world) == {"completed": 60}
    assert len(world.core.calls.of("transitions")) == 60
    assert applied_once(world)
    assert consumers.total("sends") == consumers.total("completed") == 60
    assert consumers.total("acked") == 3
    assert consumers.total("retried") == 0
    # Each invocation's row in the tick history: the tick's, and one per consumer delivery.
    kinds = await world.db.prepare(
        "SELECT kind, count(*) AS n, sum(sends) AS sends FROM tick_history GROUP BY kind"
    ).all()
    assert {r["kind"]: (r["n"], r["sends"]) for r in kinds.results} == {
        "tick": (1, 0),
        "consumer": (len(consumers.reports), 60),
    }
    metrics = await call(world.app, "GET", "/admin/metrics", headers=OPERATOR)
    text = metrics.body.decode()
    assert f'scheduling_ticks_total{{kind="consumer"}} {len(consumers.reports)}' in text
    assert 'scheduling_sends_total{outcome="completed"} 60' in text


async def test_messages_name_rows_round_robin_across_installations(world: World) -> None:
    busy, quiet = await world.install(), await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, busy, 30, due - 5_000, "busy")  # older and many
    await bulk_due(world, quiet, 2, due, "quiet")
    async with Consumers(world.app) as consumers:
        await consumers.tick(due)
    first = consumers.sent[0]
    assert first["v"] == 1
    assert first["at"] == first["sent"] == due  # on time: the tick's clock is the wall clock
    assert {installation: len(ids) for installation, ids in first["ids"].items()} == {
        busy.id: 18,
        quiet.id: 2,
    }
    named = [sid for body in consumers.sent for ids in body["ids"].values() for sid in ids]
    assert sorted(named) == [*sorted(f"sch_busy{i}" for i in range(30)), "sch_quiet0", "sch_quiet1"]


async def test_no_installation_has_more_than_its_cap_in_flight_whatever_the_consumers(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(MAX_IN_FLIGHT_PER_INSTALLATION="3"))
    big, small = await world.install(), await world.install()
    due = clock.now + MINUTE
    await bulk_due(world, big, 60, due, "big")
    await bulk_due(world, small, 10, due, "small")
    watched = InFlight(world.app.services.http)
    world.app.services.http = watched
    world.core.faults.set_latency(0.01)
    # Queues' one-second retry is ten times a request here, as it is five times a 200 ms one.
    async with Consumers(world.app, consumers=6, max_batch_size=1, delay_scale=0.1) as consumers:
        await consumers.tick(due)  # messages the cap held back come back until all is sent
    assert await statuses(world) == {"completed": 70}
    assert consumers.queue.stats.dead_letters == []
    assert watched.peak[big.id] == 3  # six consumers with six slots each, and three at most
    assert watched.peak_total > 3  # the other installation was served meanwhile
    assert consumers.total("held_back") > 0
    assert applied_once(world)


async def test_a_duplicated_or_redelivered_message_sends_nothing_twice(world: World) -> None:
    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 12, due, "dup")
    async with Consumers(world.app) as consumers:
        await consumers.tick(due)
        assert len(world.core.calls.of("transitions")) == 12
        # Every message again, as an at-least-once delivery or a producer retry would.
        await consumers.queue.send_batch(list(consumers.sent))
        await asyncio.wait_for(consumers.queue.idle(), 10)
    assert len(world.core.calls.of("transitions")) == 12
    late = consumers.reports[-1]
    assert (late["claimed"], late["sends"], late["acked"]) == (0, 0, late["messages"])
    assert applied_once(world)


async def test_a_late_message_claims_only_what_is_due_again(world: World) -> None:
    """A message that arrives after its row was retried never sends the retry early."""
    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 1, due, "late")
    world.core.faults.push(Fault.respond(503, "busy"), endpoint="transitions")
    async with Consumers(world.app) as consumers:
        await consumers.tick(due)
        retrying = await row(world, "sch_late0")
        assert retrying["status"] == "retrying"
        await consumers.queue.send_batch(list(consumers.sent))  # the old message, delivered late
        await asyncio.wait_for(consumers.queue.idle(), 10)
        assert len(world.core.calls.of("transitions")) == 1
        world.clock.now = retrying["next_attempt_at"]
        await consumers.queue.send_batch(list(consumers.sent))  # again, now that the retry is due
        await asyncio.wait_for(consumers.queue.idle(), 10)
    assert (await row(world, "sch_late0"))["status"] == "completed"
    assert len(world.core.calls.of("transitions")) == 2


async def test_a_consumer_killed_mid_batch_leaves_its_rows_to_their_lease_and_the_same_key(
    world: World,
) -> None:
    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 3, due, "kill")
    world.core.faults.set_latency(0.2)
    async with Consumers(world.app, consumers=1) as consumers:
        world.clock.now = due
        tick = asyncio.create_task(world.app.tick(due))
        await until_sent(world)
        [delivery] = consumers.queue.deliveries()
        delivery.cancel()  # the consumer dies with its requests out
        await tick
        await asyncio.wait_for(consumers.queue.idle(), 10)
        assert consumers.queue.stats.failed_deliveries == 1
        assert (await statuses(world)) == {"running": 3}  # redelivered: leased, not due
        # The next ticks leave them while their lease holds, then dispatch them again.
        await consumers.tick(due + 59_000)
        assert (await statuses(world)) == {"running": 3}
        await consumers.tick(due + 60_000)
    assert await statuses(world) == {"completed": 3}
    for i in range(3):
        calls = sends(world, await row(world, f"sch_kill{i}"))
        assert len({call.header("Idempotency-Key") for call in calls}) == 1
    assert applied_once(world)


async def test_a_dispatched_row_waits_for_its_message_then_is_dispatched_again(
    world: World,
) -> None:
    """A message can be lost (a queue emptied, a process stopped): the mark only lasts a lease."""
    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 2, due, "lost")
    lost: list[Any] = []

    async def drop(bodies: Any) -> None:
        lost.extend(bodies)

    world.app.services.queue = type("Lossy", (), {"send_batch": staticmethod(drop)})()
    world.clock.now = due
    assert (await world.app.tick(due))["dispatched"] == 2
    world.clock.now = due + 59_000
    assert (await world.app.tick(due + 59_000))["dispatched"] == 0  # still with its message
    world.clock.now = due + 60_000
    assert (await world.app.tick(due + 60_000))["dispatched"] == 2
    assert len(lost) == 2


async def test_a_consumer_runs_on_the_clock_of_the_tick_that_dispatched(world: World) -> None:
    """A tick chosen ahead of the wall clock (tests, /__scheduled?time=) runs at that instant,
    and so does the work it dispatched."""
    installation = await world.install()
    wall = world.clock.now
    ahead = wall + 5 * MINUTE
    await bulk_due(world, installation, 1, ahead, "ahead")
    async with Consumers(world.app) as consumers:
        report = await world.app.tick(ahead)  # the wall clock stays at `wall`
        await asyncio.wait_for(consumers.queue.idle(), 10)
    assert report["dispatched"] == 1
    assert (await row(world, "sch_ahead0"))["status"] == "completed"
    [attempt] = (await world.db.prepare("SELECT started_at FROM schedule_attempts").all()).results
    assert attempt["started_at"] == ahead


async def test_a_message_that_is_not_ours_is_acknowledged_and_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    odd = [
        {"v": 2, "ids": {}, "at": 0, "sent": 0},
        {"v": 1, "ids": {"ins": ["x" * 200]}, "at": 0, "sent": 0},
        {"v": 1, "ids": {"ins": "sch_1"}, "at": 0, "sent": 0},
        {"v": 1, "ids": {}, "at": True, "sent": 0},
        "hello",
    ]
    delivered = [Delivered(_Stored(f"m{i}", json.dumps(body))) for i, body in enumerate(odd)]
    report = await world.app.consume(delivered)
    assert [message.outcome for message in delivered] == [("ack", 0.0)] * 5
    assert (report["acked"], report["claimed"]) == (5, 0)
    assert "is not a runner message" in caplog.text
    assert all(messages.parse(body) is None for body in odd)


async def test_each_consumer_invocation_logs_one_json_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="scheduling.events")
    installation = await world.install()
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 3, due, "log")
    async with Consumers(world.app, consumers=1) as consumers:
        await consumers.tick(due)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "scheduling.events"]
    consume = [line for line in lines if line["event"] == "runner_consume"]
    assert len(consume) == len(consumers.reports) == 1
    [line] = consume
    assert (line["claimed"], line["sends"], line["completed"], line["acked"]) == (3, 3, 3, 1)
    assert line["limit_reached"] == 0
    assert line["d1_statements"] > 0
    assert installation.token not in caplog.text


async def test_the_local_queue_keeps_queues_rules(db: SqliteDatabase) -> None:
    """Batches, ack and retry per message, redelivery after a failure, dead letters."""
    seen: list[list[Any]] = []
    fail = {"once": True}

    async def handler(batch: Any) -> None:
        seen.append([message.body["n"] for message in batch])
        for message in batch:
            if message.body["n"] in (0, 4):
                message.ack()
        for message in batch:
            if message.body["n"] == 1 and message.attempts < 3:
                message.retry(1)  # retried twice; the third time left alone: acknowledged
            elif message.body["n"] == 2:
                message.retry(0)  # every time: dead-lettered after max_retries
            elif message.body["n"] == 3 and fail["once"]:
                fail["once"] = False
                raise RuntimeError("a consumer bug")  # what it did not acknowledge comes back

    queue = MemoryQueue([handler], max_batch_size=5, max_retries=3, delay_scale=0.001)
    queue.start()
    await queue.send_batch([{"n": n} for n in range(5)])
    await asyncio.wait_for(queue.idle(), 10)
    await queue.stop()
    assert seen[0] == [0, 1, 2, 3, 4]
    assert Counter(n for batch in seen for n in batch) == {0: 1, 1: 3, 2: 4, 3: 2, 4: 1}
    assert queue.stats.dead_letters == [{"n": 2}]
    assert queue.stats.failed_deliveries == 1


async def test_the_local_queue_says_idle_whatever_its_consumers_were_doing_meanwhile() -> None:
    """`idle()` (what `/__scheduled` waits on) answers once the last message is settled, even
    when another consumer's wait comes between that settle and `idle`'s own wait (with one
    Event shared and cleared by every waiter, that wake-up was lost about one run in four
    here, and the dev server's tick never answered)."""
    rng = random.Random(1)

    async def handler(batch: Any) -> None:
        await asyncio.sleep(rng.random() * 0.001)

    queue = MemoryQueue([handler] * 8, max_batch_size=3, delay_scale=0.001)
    queue.start()
    try:
        for _ in range(600):
            await queue.send_batch([{"n": i} for i in range(rng.randint(1, 9))])
            await asyncio.wait_for(queue.idle(), 1)
    finally:
        await queue.stop()
    assert queue.stats.acked == queue.stats.sent


async def test_a_message_delivered_past_the_lateness_cap_sends_nothing(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world = World(db, clock, env=base_env(MAX_LATENESS_MS="60000"))
    installation = await world.install()
    due = clock.now + MINUTE
    await bulk_due(world, installation, 3, due, "stale")
    consumers = Consumers(world.app)
    clock.now = due
    assert (await world.app.tick(due))["dispatched"] == 3
    clock.now = due + 61_000  # the queue was slow: the consumers start after the cap
    async with consumers:
        await asyncio.wait_for(consumers.queue.idle(), 10)
    assert world.core.calls.of("transitions") == []
    assert await statuses(world) == {"refused": 3}
    [report] = consumers.reports
    assert (report["refused_unsent"], report["sends"], report["acked"]) == (3, 0, 1)
