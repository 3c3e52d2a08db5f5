"""The engine's notification deliveries (it replaces deliveries.py): deliveries claimed from
the outbox under a lease, each handed to its endpoint's channel in a connection slot, and
the batch settled (each delivery's next step, its endpoint marked failing, healthy or gone).

An invocation runs it after its schedule sends, within what is left of its budget. A
delivery claimed and not sent because of a platform limit goes back to waiting, due now, its
attempt not counted; what a refused settle could not write is left to its lease.
"""

from __future__ import annotations

from scheduling.channels.port import Channel, Event, OpenTarget
from scheduling.channels.webhook import StandardWebhook
from scheduling.domain.delivery_policy import (
    ENDPOINT_GONE,
    SECRET_UNREADABLE,
    AttemptResult,
    after_attempt,
)
from scheduling.domain.outbox import ClaimedDelivery, DeliveryTarget, SettledDelivery
from scheduling.limits import delivery_batch_cost
from scheduling.ports import LimitReached
from scheduling.repository.outbox import Outbox
from scheduling.runner.engine import Batch, Engine
from scheduling.services import log


class DeliveryWork:
    def __init__(self, engine: Engine, outbox: Outbox) -> None:
        services = engine.services
        self.engine = engine
        self.report = engine.report
        self.clock = engine.clock
        self.outbox = outbox
        self.channel: Channel = StandardWebhook(services.http, services.crypto)
        self.batch_size = services.config.max_rows_per_tick
        self.lease_ms = services.config.lease_ms
        self._targets: dict[str, DeliveryTarget] = {}
        self._opened: dict[str, OpenTarget | None] = {}

    def cost(self) -> int:
        return delivery_batch_cost(self.batch_size)

    async def claim(self, engine: Engine) -> Batch[ClaimedDelivery] | None:
        lease_token = engine.services.crypto.random_token()
        claimed, targets = await self.outbox.claim(
            lease_token, self.clock(), self.lease_ms, self.batch_size
        )
        if not claimed:
            return None
        self._targets.update(targets)
        # Fewer than asked: the outbox had no more due (nothing is written meanwhile).
        return Batch(claimed, lease_token, last=len(claimed) < self.batch_size)

    async def unslotted(self, item: ClaimedDelivery) -> SettledDelivery | None:
        """An endpoint deleted or disabled meanwhile, or one whose secret does not open, is
        not sent to: the delivery fails, or waits for the secret."""
        target = self._targets.get(item.endpoint_id)
        opened = None if target is None else await self._open(target)
        if target is not None and not target.disabled and opened is not None:
            return None
        error = SECRET_UNREADABLE if target and not target.disabled else ENDPOINT_GONE
        return self._ended(item, self.clock(), AttemptResult(None, error), sent=False)

    def ready(self, item: ClaimedDelivery, at: int) -> SettledDelivery | None:
        return None

    def handed_back(self, item: ClaimedDelivery, at: int) -> SettledDelivery:
        self.report.webhooks_handed_back += 1
        return SettledDelivery.given_back(item, at)

    async def send(self, item: ClaimedDelivery, at: int) -> SettledDelivery:
        opened = self._opened[item.endpoint_id]
        assert opened is not None  # sent only when it opened
        self.report.webhook_sends += 1
        try:
            result = await self.channel.deliver(opened, Event(item.id, item.payload), at)
        except LimitReached:
            self.report.webhook_sends -= 1
            raise
        return self._ended(item, at, result, sent=True)

    async def settle(self, batch: Batch[ClaimedDelivery], done: list[SettledDelivery]) -> None:
        try:
            lost = await self.outbox.settle(batch.lease_token, done, self.clock())
        except LimitReached as limit:  # left to the lease: sent again after it, same id
            self.engine.reached(limit)
            log.warning("%d deliveries left to their lease: the settle was refused", len(done))
            return
        self.report.webhook_lost_lease += len(lost)
        for delivery_id in lost:
            log.warning(
                "delivery %s: lease lost before settle; left to its new runner", delivery_id
            )

    def _ended(
        self, item: ClaimedDelivery, started: int, result: AttemptResult, *, sent: bool
    ) -> SettledDelivery:
        finished = self.clock()
        settlement = after_attempt(
            result, attempt=item.attempt, created_at=item.created_at, now=finished
        )
        self.report.delivery_ended(settlement.status, finished - item.created_at)
        return SettledDelivery(
            delivery=item,
            status=settlement.status,
            next_attempt_at=settlement.next_attempt_at,
            finished_at=settlement.finished_at,
            attempted_at=started,
            http_status=result.http_status,
            error=result.error,
            sent=sent,
        )

    async def _open(self, target: DeliveryTarget) -> OpenTarget | None:
        """The endpoint as its channel sends to it, opened once per invocation."""
        if target.id not in self._opened:
            self._opened[target.id] = await self.channel.open(target)
        return self._opened[target.id]
