"""Deliveries sent on a person's word, outside the cron: the engine's delivery work over the
deliveries a page names (Send again), within the page's own request and one budget; or, for
many at once (Replay), handed to the queue when it is bound, else left due for the next tick.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.ports import LimitReached, QueueUnavailable
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.budget import Budget
from scheduling.runner.delivery_handoff import hand_off
from scheduling.runner.delivery_work import DeliveryWork
from scheduling.runner.engine import Engine
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


async def deliver_now(services: Services, delivery_ids: Sequence[str]) -> TickReport:
    """Claim, send and settle `delivery_ids` (those due) through the engine, now."""
    now = services.clock.now_ms()
    trips = RoundTrips(services.db)
    report = TickReport()
    engine = Engine(
        services,
        trips,
        report,
        lambda: services.clock.now_ms(),
        now=now,
        budget=Budget.of(services),
    )
    await engine.run(DeliveryWork(engine, Outbox(trips), delivery_ids))
    return report


async def to_the_runner(services: Services, delivery_ids: Sequence[str]) -> bool:
    """With a queue, `delivery_ids` handed to its consumers at once (True); else they wait,
    due, for the next tick's delivery phase (False)."""
    queue = services.queue
    if queue is None or not delivery_ids:
        return False
    try:
        await hand_off(queue, delivery_ids, services.clock.now_ms(), services)
    except (LimitReached, QueueUnavailable) as failed:
        log.warning("%d deliveries left for the next tick: %s", len(delivery_ids), failed)
        return False
    return True
