"""An invocation's last phase (a tick's, or a queue consumer's): webhook deliveries from the
outbox, claimed, sent in the same connection slots as the transitions (which have all been
sent by then), and settled, within what is left of the invocation's budget.

Batches roll as the transitions' do: the next is claimed once every delivery of
the current one holds a slot. Each batch's lease outlives its sends (the same
contract as a batch of schedules), and a settle applies only under that lease.
A platform limit ends the phase as it ends a drain: nothing more is claimed, a
delivery claimed and not sent goes back to waiting, due now, its attempt not
counted, and what the settle could not write is left to its lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from scheduling import webhooks
from scheduling.domain import webhook_signing
from scheduling.domain.delivery_policy import (
    ENDPOINT_GONE,
    SECRET_UNREADABLE,
    AttemptResult,
    DeliveryStatus,
    after_attempt,
)
from scheduling.limits import delivery_batch_cost
from scheduling.ports import LimitReached
from scheduling.repository.outbox import ClaimedDelivery, DeliveryTarget, SettledDelivery
from scheduling.repository.runner_store import RunnerStore
from scheduling.runner.budget import Budget
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


class DeliveryRunner:
    """`now` is the invocation's instant (its elapsed time is `clock() - now`); `on_limit`
    hears of a platform limit, as the invocation's batches do."""

    def __init__(
        self,
        services: Services,
        store: RunnerStore,
        report: TickReport,
        clock: Callable[[], int],
        *,
        now: int,
        budget: Budget,
        on_limit: Callable[[LimitReached], None],
    ) -> None:
        self.services = services
        self.store = store
        self.report = report
        self.clock = clock
        self.now = now
        self.budget = budget
        self.on_limit = on_limit
        self.batch_size = services.config.max_rows_per_tick
        self.lease_ms = services.config.lease_ms
        self.limit: LimitReached | None = None
        self._secrets: dict[str, str | None] = {}

    def due(self) -> bool:
        """This invocation's settles wrote events, or the outbox has a delivery due (as this
        invocation's due query or dispatch said): one with nothing to notify spends nothing."""
        next_at = self.store.outbox_next_at
        return self.store.events_written > 0 or (next_at is not None and next_at <= self.clock())

    def room(self, unsettled_batches: int) -> bool:
        """Time, D1 statements and subrequests left for one more batch of deliveries at its
        most expensive; what is left waits in the outbox for the next invocation."""
        cost = delivery_batch_cost(self.batch_size)
        return self.limit is None and self.budget.allows(
            elapsed_ms=self.clock() - self.now,
            statements=self.store.statements + (unsettled_batches + 1) * cost,
            sends=self.report.sends + self.report.webhook_sends + self.batch_size,
        )

    def _reached(self, limit: LimitReached) -> None:
        if self.limit is None:
            self.limit = limit
        self.on_limit(limit)

    async def run(self, slots: asyncio.Semaphore) -> None:
        in_flight: list[asyncio.Task[None]] = []
        try:
            while self.room(sum(not task.done() for task in in_flight)):
                lease_token = self.services.crypto.random_token()
                try:
                    claimed, targets = await self.store.claim_deliveries(
                        lease_token, self.clock(), self.lease_ms, self.batch_size
                    )
                except LimitReached as limit:
                    self._reached(limit)
                    break
                if not claimed:
                    break
                admitted = asyncio.Event()
                in_flight.append(
                    asyncio.create_task(
                        self._send_and_settle(claimed, targets, lease_token, slots, admitted)
                    )
                )
                await admitted.wait()
                if len(claimed) < self.batch_size:
                    break  # the outbox had no more due: nothing is written meanwhile
        except BaseException:
            for task in in_flight:  # the runner is stopping: so are its sends
                task.cancel()
            raise
        finally:
            outcomes = await asyncio.gather(*in_flight, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _send_and_settle(
        self,
        claimed: Sequence[ClaimedDelivery],
        targets: dict[str, DeliveryTarget],
        lease_token: str,
        slots: asyncio.Semaphore,
        admitted: asyncio.Event,
    ) -> None:
        waiting = len(claimed)

        def admit() -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0:
                admitted.set()

        async def one(delivery: ClaimedDelivery) -> SettledDelivery:
            target = targets.get(delivery.endpoint_id)
            secret = None if target is None else await self._secret(target)
            if target is None or target.disabled or secret is None:
                admit()
                error = SECRET_UNREADABLE if target and not target.disabled else ENDPOINT_GONE
                return self._settled(delivery, self.clock(), AttemptResult(None, error), sent=False)
            async with slots:
                admit()
                started = self.clock()
                if self.limit is not None:
                    return self._handed_back(delivery, started)
                self.report.webhook_sends += 1
                try:
                    result = await webhooks.post_event(
                        self.services.http,
                        self.services.crypto,
                        target.url,
                        secret,
                        delivery.id,
                        delivery.payload,
                        started,
                    )
                except LimitReached as limit:  # refused before it left: nothing was sent
                    self.report.webhook_sends -= 1
                    self._reached(limit)
                    return self._handed_back(delivery, started)
            return self._settled(delivery, started, result, sent=True)

        settled = await asyncio.gather(*(one(delivery) for delivery in claimed))
        try:
            lost = await self.store.settle_deliveries(lease_token, settled, self.clock())
        except LimitReached as limit:  # left to the lease: sent again after it, same id
            self._reached(limit)
            log.warning("%d deliveries left to their lease: the settle was refused", len(settled))
            return
        self.report.webhook_lost_lease += len(lost)
        for delivery_id in lost:
            log.warning(
                "delivery %s: lease lost before settle; left to its new runner", delivery_id
            )

    def _settled(
        self, delivery: ClaimedDelivery, started: int, result: AttemptResult, *, sent: bool
    ) -> SettledDelivery:
        finished = self.clock()
        settlement = after_attempt(
            result, attempt=delivery.attempt, created_at=delivery.created_at, now=finished
        )
        self.report.delivery_ended(settlement.status, finished - delivery.created_at)
        return SettledDelivery(
            delivery=delivery,
            status=settlement.status,
            next_attempt_at=settlement.next_attempt_at,
            finished_at=settlement.finished_at,
            attempted_at=started,
            http_status=result.http_status,
            error=result.error,
            sent=sent,
        )

    def _handed_back(self, delivery: ClaimedDelivery, at: int) -> SettledDelivery:
        """Claimed, never sent: waiting again, due now, its attempt given back."""
        self.report.webhooks_handed_back += 1
        return SettledDelivery(
            delivery=delivery,
            status=DeliveryStatus.WAITING,
            next_attempt_at=at,
            finished_at=None,
            attempted_at=None,
            http_status=None,
            error=None,
            sent=False,
            handed_back=True,
        )

    async def _secret(self, target: DeliveryTarget) -> str | None:
        """The endpoint's signing secret, opened once per runner; None when TOKEN_KEY cannot."""
        if target.id not in self._secrets:
            self._secrets[target.id] = await webhook_signing.open_secret(
                self.services.crypto, target.installation_id, target.id, target.secret_sealed
            )
        return self._secrets[target.id]
