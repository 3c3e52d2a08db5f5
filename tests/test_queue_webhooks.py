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
from scheduling.runner import messages
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


async def test_a_consumer_with_sends_still_to_make_hands_its_events_to_the_queue_at_once(
    world: World,
) -> None:
    """Sixty refusals in three batches of one consumer: the first batches' events are handed
    to the queue as delivery messages when they settle (their invocation still has sends to
    make), and other consumer invocations deliver them, each once, signed; what it kept is
    delivered by the consumer that settled it, after its sends."""
    receiver = Receiver()
    installation, secret = await subscribed(world, receiver)
    due = world.clock.now + MINUTE
    await bulk_due(world, installation, 60, due, "burst")
    world.core.faults.push(
        Fault.respond(409, "workflow_conflict"), endpoint="transitions", times=60
    )
    async with Consumers(world.app, consumers=3, max_batch_size=10) as consumers:
        tick = await consumers.tick(due)
    assert tick["dispatched"] == 60
    handed = [body for body in consumers.sent if "deliveries" in body]
    assert consumers.total("deliveries_queued") == sum(len(b["deliveries"]) for b in handed)
    assert consumers.total("deliveries_queued") >= 20  # the first batch's, at least
    [settling] = [report for report in consumers.reports if report["refused"]]
    assert settling["refused"] == settling["webhook_events"] == 60
    assert settling["webhook_sends"] == 60 - settling["deliveries_queued"]
    assert sorted(Counter(d.id for d in receiver.deliveries).values()) == [1] * 60
    assert all(signed_by(secret, d) for d in receiver.deliveries)
    stored = await deliveries(world)
    assert {(d["status"], d["attempt_count"]) for d in stored} == {("delivered", 1)}
    assert consumers.queue.stats.dead_letters == []


async def test_a_delivery_message_for_what_is_no_longer_due_is_acknowledged(
    world: World,
) -> None:
    """A message only says what to try: a delivery already sent, or never written, is found
    not due, and the message is acknowledged without a request."""
    receiver = Receiver()
    installation, _ = await subscribed(world, receiver)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    async with Consumers(world.app) as consumers:
        await consumers.tick(s["due_at"])
        [delivered] = await deliveries(world)
        await consumers.queue.send_batch(
            [messages.deliveries_body([delivered["id"], "msg_gone_whe_gone"], s["due_at"], 0)]
        )
        await consumers.queue.idle()
    late = consumers.reports[-1]
    assert (late["acked"], late["retried"], late["webhook_sends"]) == (1, 0, 0)
    assert len(receiver.deliveries) == 1
