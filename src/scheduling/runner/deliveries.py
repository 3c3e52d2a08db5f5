"""The tick's last phase: webhook deliveries from the outbox, claimed, sent in the same
connection slots as the transitions (which have all been sent by then), and settled.

Batches roll as the transitions' do: the next is claimed once every delivery of
the current one holds a slot. Each batch's lease outlives its sends (the same
contract as a batch of schedules), and a settle applies only under that lease.
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
    after_attempt,
)
from scheduling.repository.outbox import ClaimedDelivery, DeliveryTarget, SettledDelivery
from scheduling.repository.runner_store import RunnerStore
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


class DeliveryRunner:
    """`room(unsettled_batches)` says whether the tick's budgets allow one more batch."""

    def __init__(
        self,
        services: Services,
        store: RunnerStore,
        report: TickReport,
        clock: Callable[[], int],
        room: Callable[[int], bool],
    ) -> None:
        self.services = services
        self.store = store
        self.report = report
        self.clock = clock
        self.room = room
        self.batch_size = services.config.max_rows_per_tick
        self.lease_ms = services.config.lease_ms
        self._secrets: dict[str, str | None] = {}

    async def run(self, slots: asyncio.Semaphore) -> None:
        in_flight: list[asyncio.Task[None]] = []
        try:
            while self.room(sum(not task.done() for task in in_flight)):
                lease_token = self.services.crypto.random_token()
                claimed, targets = await self.store.claim_deliveries(
                    lease_token, self.clock(), self.lease_ms, self.batch_size
                )
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
                self.report.webhook_sends += 1
                result = await webhooks.post_event(
                    self.services.http,
                    self.services.crypto,
                    target.url,
                    secret,
                    delivery.id,
                    delivery.payload,
                    started,
                )
            return self._settled(delivery, started, result, sent=True)

        settled = await asyncio.gather(*(one(delivery) for delivery in claimed))
        lost = await self.store.settle_deliveries(lease_token, settled, self.clock())
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

    async def _secret(self, target: DeliveryTarget) -> str | None:
        """The endpoint's signing secret, opened once per runner; None when TOKEN_KEY cannot."""
        if target.id not in self._secrets:
            self._secrets[target.id] = await webhook_signing.open_secret(
                self.services.crypto, target.installation_id, target.id, target.secret_sealed
            )
        return self._secrets[target.id]
