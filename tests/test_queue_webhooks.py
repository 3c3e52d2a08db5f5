"""Webhooks beside the queue fan-out and the platform's limits: a consumer invocation delivers
the events its own settles wrote, after its sends; a tick with a queue delivers the retries
whose time came; and a delivery the platform refuses to send goes back to waiting, due at
once, its attempt not counted, and is delivered once by a later invocation."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from fake_core import Fault
from fake_core.state import Installation
from scheduling.domain.delivery_policy import RETRY_DELAYS_MS
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock
from tests.support.platform_limits import limit, limited_tick
from tests.support.queue import Consumers
from tests.support.webhooks import Receiver, add_endpoint, signed_by, with_receivers
from tests.support.world import MINUTE, World, bulk_due, row, schedule


@pytest.fixture
def world(db: SqliteDatabase, clock: FakeClock) -> World:
    return World(db, clock)


async def subscribed(
    world: World, receiver: Receiver, events: tuple[str, ...] = ("schedule.refused",)
) -> tuple[Installation, str]:
    """An installation with one endpoint (the receiver) hearing of `events`; and its secret."""
    with_receivers(world, receiver)
    installation = await world.install()
    manage = await world.browser_for(installation, content_id=None)
    return installation, await add_endpoint(manage, installation.id, receiver.url, events)


async def deliveries(world: World) -> list[dict[str, Any]]:
    result = await world.db.prepare("SELECT * FROM webhook_deliveries ORDER BY id").all()
    return result.results


async def test_a_consumer_delivers_the_refusal_it_settled_in_the_same_invocation(
    world: World,
) -> None:
    receiver = Receiver()
    installation, secret = await subscribed(world, receiver)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "scheduled_target_stale"), endpoint="transitions")
    async with Consumers(world.app, consumers=2) as consumers:
        tick = await consumers.tick(s["due_at"])
    assert (tick["dispatched"], tick["sends"], tick["webhook_sends"]) == (1, 0, 0)
    [settling] = [report for report in consumers.reports if report["refused"]]
    assert settling["webhook_events"] == settling["webhooks_delivered"] == 1
    assert (await row(world, s["id"]))["result_code"] == "scheduled_target_stale"
    [delivery] = receiver.deliveries
    assert signed_by(secret, delivery)
    assert delivery.event["type"] == "schedule.refused"
    assert delivery.event["data"]["schedule_id"] == s["id"]


async def test_with_a_queue_the_tick_delivers_the_retries_whose_time_came(world: World) -> None:
    receiver = Receiver()
    receiver.answer_next(500)
    installation, secret = await subscribed(world, receiver)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "scheduled_target_stale"), endpoint="transitions")
    async with Consumers(world.app) as consumers:
        await consumers.tick(s["due_at"])
        assert consumers.total("webhooks_retrying") == 1
        early = await consumers.tick(s["due_at"] + RETRY_DELAYS_MS[0] // 2)
        assert early["webhook_sends"] == 0  # not yet: the outbox said when
        later = await consumers.tick(s["due_at"] + MINUTE)
    assert (later["dispatched"], later["webhooks_delivered"]) == (0, 1)
    first, again = receiver.deliveries
    assert (first.id, first.body) == (again.id, again.body)
    assert signed_by(secret, again)
    [stored] = await deliveries(world)
    assert (stored["status"], stored["attempt_count"]) == ("delivered", 2)


async def test_a_delivery_the_platform_refuses_is_handed_back_and_sent_once_later(
    world: World,
) -> None:
    receiver = Receiver()
    installation, secret = await subscribed(world, receiver, ("schedule.completed",))
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 25, due, "lim")
    limit(world.app, subrequests=25)  # the transitions use all of the first invocation's
    first = await limited_tick(world.app, due)
    assert (first["completed"], first["webhook_events"]) == (25, 25)
    assert (first["platform_limit"], first["webhook_sends"], first["webhooks_delivered"]) == (
        1,
        0,
        0,
    )
    assert first["webhooks_handed_back"] == 20  # the first batch claimed; the rest still waits
    assert receiver.deliveries == []
    stored = await deliveries(world)
    assert {(d["status"], d["attempt_count"]) for d in stored} == {("waiting", 0)}
    assert all(d["next_attempt_at"] <= due + MINUTE for d in stored)
    # Later invocations stay below what the first met, and deliver the rest once each.
    for n in (1, 2):
        report = await limited_tick(world.app, due + n * MINUTE)
        assert report["platform_limit"] == 0
        assert report["webhook_sends"] <= 25
    assert len(receiver.deliveries) == 25
    assert set(Counter(d.id for d in receiver.deliveries).values()) == {1}
    assert all(signed_by(secret, d) for d in receiver.deliveries)
    stored = await deliveries(world)
    assert {(d["status"], d["attempt_count"]) for d in stored} == {("delivered", 1)}
