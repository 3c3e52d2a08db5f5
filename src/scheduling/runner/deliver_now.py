"""Deliveries sent on a person's word, outside the cron: the engine's delivery work over the
deliveries a page names (Send again), within the page's own request and one budget. (Many at
once, a Replay, wait due for the next invocation's delivery phase.)
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.budget import Budget
from scheduling.runner.delivery_work import DeliveryWork
from scheduling.runner.engine import Engine
from scheduling.runner.report import TickReport
from scheduling.services import Services


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
