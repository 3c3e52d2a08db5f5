"""The engine's notification deliveries: messages claimed from the outbox under a lease (one
delivery, or all a digest kind's endpoint has due), each handed to its channel in a
connection slot, and the batch settled. An invocation runs them after its sends; a page runs
them within its own request for Send again (`deliver_now`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.channels.kinds import channels, kind_of, pacing
from scheduling.channels.port import Channel, OpenTarget
from scheduling.domain.notifications import (
    ENDPOINT_GONE,
    SECRET_UNREADABLE,
    AttemptResult,
    after_attempt,
)
from scheduling.domain.records import ClaimedDelivery, DeliveryTarget, Message, SettledMessage
from scheduling.limits import delivery_batch_cost
from scheduling.ports import LimitReached
from scheduling.repository.outbox import Outbox
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.engine import Batch, Budget, Engine, OnEngine, TickReport
from scheduling.services import Services, log

# -- the work --------------------------------------------------------------------------------------


class DeliveryWork(OnEngine):
    """`named`: only these deliveries (an alarm's own events, a page's), rather than all that
    are due."""

    def __init__(self, engine: Engine, outbox: Outbox, named: Sequence[str] | None = None) -> None:
        services = engine.services
        self.engine = engine
        self.outbox = outbox
        self.named = named
        self.channels: dict[str, Channel] = channels(services)
        self.batch_size = services.config.max_rows_per_batch
        self.lease_ms = services.config.lease_ms
        self.rng = services.rng
        self._targets: dict[str, DeliveryTarget] = {}
        self._opened: dict[str, OpenTarget | None] = {}

    def follows(self) -> bool:
        return False  # a delivery's settle makes nothing more due

    def cost(self) -> int:
        return delivery_batch_cost(self.batch_size)

    async def claim(self, engine: Engine) -> Batch[Message] | None:
        lease_token = engine.services.crypto.random_token()
        at = self.clock()
        claimed, targets = await self.outbox.claim(
            lease_token, at, self.lease_ms, self.batch_size, pacing(), self.named
        )
        if not claimed:
            return None
        self._targets.update(targets)
        messages = self._messages(claimed)
        # Fewer than asked: the outbox had no more due (nothing is written meanwhile).
        last = len(messages) < self.batch_size
        return Batch(messages, lease_token, last=last, claimed_at=at)

    def _messages(self, claimed: Sequence[ClaimedDelivery]) -> list[Message]:
        """One message a delivery, but one a digest kind's endpoint (oldest first)."""
        messages: list[Message] = []
        grouped: dict[str, list[ClaimedDelivery]] = {}
        for delivery in claimed:
            target = self._targets.get(delivery.endpoint_id)
            kind = None if target is None else kind_of(target.kind)
            if kind is not None and kind.digest:
                grouped.setdefault(delivery.endpoint_id, []).append(delivery)
            else:
                messages.append(Message(delivery.endpoint_id, (delivery,)))
        digests = [Message(e, tuple(ds), digest=True) for e, ds in grouped.items()]
        return sorted([*messages, *digests], key=lambda m: (m.deliveries[0].created_at, m.id))

    def share_of(self, item: Message) -> None:
        return None  # an endpoint's own limits pace it (`kinds.py`), not the shares

    async def unslotted(self, item: Message) -> SettledMessage | None:
        """An endpoint deleted or disabled meanwhile, or one whose secret does not open, is
        not sent to: the message fails, or waits for the secret."""
        target = self._targets.get(item.endpoint_id)
        opened = None if target is None else await self._open(target)
        if target is not None and not target.disabled and opened is not None:
            return None
        error = SECRET_UNREADABLE if target and not target.disabled else ENDPOINT_GONE
        return self._ended(item, self.clock(), AttemptResult(None, error), sent=False)

    def ready(self, item: Message, at: int) -> SettledMessage | None:
        return None

    def handed_back(self, item: Message, at: int) -> SettledMessage:
        self.report.deliveries_handed_back += len(item.deliveries)
        return SettledMessage.given_back(item, at)

    async def send(self, item: Message, at: int) -> SettledMessage:
        target, opened = self._targets[item.endpoint_id], self._opened[item.endpoint_id]
        assert opened is not None  # sent only when it opened
        channel = self.channels[target.kind]
        self.report.delivery_sends += 1
        try:
            event = await channel.event(target, item.deliveries)
            result = await channel.deliver(opened, event, at)
        except LimitReached:
            self.report.delivery_sends -= 1
            raise
        return self._ended(item, at, result, sent=True)

    async def settle(self, batch: Batch[Message], done: list[SettledMessage]) -> None:
        lease_until = batch.claimed_at + self.lease_ms
        try:
            lost = await self.outbox.settle(batch.lease_token, lease_until, done, self.clock())
        except LimitReached as limit:  # left to the lease: sent again after it, same id
            self.engine.reached(limit)
            log.warning("%d messages left to their lease: the settle was refused", len(done))
            return
        self.report.delivery_lost_lease += len(lost)
        for delivery_id in lost:
            log.warning(
                "delivery %s: lease lost before settle; left to its new runner", delivery_id
            )

    def _ended(
        self, item: Message, started: int, result: AttemptResult, *, sent: bool
    ) -> SettledMessage:
        finished = self.clock()
        settlement = after_attempt(
            result, attempt=item.attempt, tried_from=item.tried_from, now=finished, rng=self.rng
        )
        next_at = settlement.next_attempt_at
        target = self._targets.get(item.endpoint_id)
        kind = None if target is None else kind_of(target.kind)
        if next_at is not None and kind is not None:  # a paced kind's next message: no sooner
            next_at = max(next_at, started + kind.interval_ms)
        for delivery in item.deliveries:
            self.report.delivery_ended(settlement.status, finished - delivery.created_at)
        return SettledMessage(
            message=item,
            status=settlement.status,
            next_attempt_at=next_at,
            finished_at=settlement.finished_at,
            attempted_at=started,
            http_status=result.http_status,
            error=result.error,
            sent=sent,
        )

    async def _open(self, target: DeliveryTarget) -> OpenTarget | None:
        """The endpoint as its channel sends to it, opened once per invocation."""
        if target.id not in self._opened:
            self._opened[target.id] = await self.channels[target.kind].open(target)
        return self._opened[target.id]


# -- sent on a person's word -----------------------------------------------------------------------


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
