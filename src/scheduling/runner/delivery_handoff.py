"""Deliveries that never wait for the next tick: with `SEND_QUEUE` bound, the events a settle
wrote that its own invocation cannot send within its budget now (it still has sends to make,
or no room left for them) are handed to the queue at once, as delivery messages, and the
consumers that take them deliver them (`consume.py`).

A message only says what to try: a delivery is owned only by its claim, so one the settling
invocation or a tick reaches first is found not due, and a lost message leaves its deliveries
waiting, due, for the next invocation's delivery phase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduling.limits import MAX_MESSAGES_PER_SEND, delivery_batch_cost
from scheduling.ports import LimitReached, QueueProducer, QueueUnavailable
from scheduling.repository.outbox import Outbox
from scheduling.runner import messages
from scheduling.runner.engine import Engine
from scheduling.services import Services, log


class DeliveryHandoff:
    def __init__(self, engine: Engine, outbox: Outbox, queue: QueueProducer) -> None:
        self.engine = engine
        self.outbox = outbox
        self.queue = queue

    def cannot_deliver_now(self, count: int) -> bool:
        """The invocation has more sends to make (its deliveries would wait behind them), or
        no room in its budget for `count` deliveries after them."""
        engine = self.engine
        if engine.claiming or len(engine.unsettled()) > 1:
            return True
        batches = -(-count // engine.services.config.max_rows_per_tick)
        return not engine.budget.allows(
            elapsed_ms=engine.clock() - engine.now,
            statements=engine.trips.statements + batches * delivery_batch_cost(count),
            sends=engine.subrequests() + count,
        )

    async def settled(self) -> None:
        """After a settle: its events go to the queue when this invocation cannot send them
        now; otherwise they wait for its own delivery phase."""
        if not self.outbox.fresh or not self.cannot_deliver_now(len(self.outbox.fresh)):
            return
        if self.engine.limit is not None:
            return  # no more calls in this invocation: the next one delivers them
        ids = self.outbox.take_fresh()
        try:
            await hand_off(self.queue, ids, self.engine.clock(), self.engine.services, self.count)
        except LimitReached as limit:
            self.engine.reached(limit)
            return
        except QueueUnavailable:
            log.warning("%d deliveries not handed to the queue: they wait, due", len(ids))
            return
        self.engine.report.deliveries_queued += len(ids)

    def count(self) -> None:
        self.engine.queue_calls += 1


async def hand_off(
    queue: QueueProducer,
    ids: Sequence[str],
    at: int,
    services: Services,
    each_call: Callable[[], None] = lambda: None,
) -> None:
    """`ids` in delivery messages (at most 500 each, 100 a call). Raises as the queue does
    (`LimitReached`, `QueueUnavailable`); what it did not take waits in the outbox, due."""
    wall = services.clock.now_ms()
    bodies = [
        messages.deliveries_body(ids[i : i + messages.MAX_IDS], at, wall)
        for i in range(0, len(ids), messages.MAX_IDS)
    ]
    for i in range(0, len(bodies), MAX_MESSAGES_PER_SEND):
        each_call()
        await queue.send_batch(bodies[i : i + MAX_MESSAGES_PER_SEND])
