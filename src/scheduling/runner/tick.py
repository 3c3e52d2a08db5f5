"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, then deliver the webhooks the outbox has due (through the same slots,
within what is left of the budget), then write the tick's record once (its row of the tick
history, in the same round trip as the totals it adds to) and log its line. A tick that fails
records its row too, with the exception's type, in one more write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.limits import RECORD_STATEMENTS, batch_cost, delivery_batch_cost
from scheduling.ports import Clock, Statement
from scheduling.repository.runner_store import RunnerStore
from scheduling.runner import history
from scheduling.runner.batch import BatchRunner
from scheduling.runner.deliveries import DeliveryRunner
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


@dataclass(frozen=True)
class Invocation:
    """A cron invocation: the minute it stands for, and the wall clock when it began.

    Workers bounds neither how late an invocation is delivered nor how far its
    `scheduledTime` then lies behind the real time, so the tick's instant is the later
    of the two: a late delivery can never make a late send look on time.
    """

    scheduled_time: int
    started: int

    @classmethod
    def begin(cls, clock: Clock, scheduled_time: int) -> Invocation:
        return cls(scheduled_time, clock.now_ms())

    @property
    def at(self) -> int:
        """The tick's instant (epoch ms)."""
        return max(self.scheduled_time, self.started)

    @property
    def cron_delay_ms(self) -> int:
        """How late the invocation was delivered (0 when on time or early)."""
        return max(0, self.started - self.scheduled_time)


async def run_tick(services: Services, invocation: Invocation) -> dict[str, int]:
    """Run one tick for `invocation`; returns its counts, as recorded and logged."""
    return (await Tick(services, invocation).run()).as_record()


class Tick:
    def __init__(self, services: Services, invocation: Invocation) -> None:
        config = services.config
        self.services = services
        self.now = invocation.at
        self.started = invocation.started
        self.batch_size = config.max_rows_per_tick
        self.concurrency = config.send_concurrency
        self.budget_ms = config.tick_budget_ms
        self.max_queries = config.max_d1_queries_per_tick
        self.max_sends = config.max_sends_per_tick
        self.store = RunnerStore(services.db)
        self.report = TickReport(cron_delay_ms=invocation.cron_delay_ms)
        self.batches = BatchRunner(services, self.store, self.report, self.clock)
        self.deliveries = DeliveryRunner(
            services, self.store, self.report, self.clock, self._room_for_deliveries
        )

    def clock(self) -> int:
        """The tick's instant advanced by the real time spent since the invocation began.

        Every decision within the tick reads this: lateness, leases, retries.
        """
        return self.now + max(0, self.services.clock.now_ms() - self.started)

    def elapsed_ms(self) -> int:
        return self.clock() - self.now

    async def run(self) -> TickReport:
        try:
            slots = asyncio.Semaphore(self.concurrency)
            await self._roll(slots)
            if self._deliveries_due():
                await self.deliveries.run(slots)
            await self.store.record(self._record, RECORD_STATEMENTS)
        except Exception as error:
            await self._record_failure(error)
            raise
        emit("runner_tick", at=rfc3339(self.now), duration_ms=self.elapsed_ms(), **self._counts())
        return self.report

    async def _roll(self, slots: asyncio.Semaphore) -> None:
        """Batches roll: the next is claimed once every claim of the current one holds a slot,
        so its sends take over the slots as the last wave frees them."""
        in_flight: list[asyncio.Task[None]] = []
        try:
            rows = await self.store.due(self.now, self.batch_size)
            while rows:
                self.report.batches += 1
                self.report.due += len(rows)
                lease_token = self.services.crypto.random_token()
                claims, refused = await self.batches.claim(rows, lease_token)
                if not claims and not refused:
                    break  # another runner changed every row first: leave the rest to it
                if claims:
                    admitted = asyncio.Event()
                    in_flight.append(
                        asyncio.create_task(
                            self.batches.send_and_settle(claims, lease_token, slots, admitted)
                        )
                    )
                    await admitted.wait()
                if not self._room_for_another_batch(sum(not task.done() for task in in_flight)):
                    self.report.limit_reached = 1
                    break
                rows = await self.store.due(self.clock(), self.batch_size)
        finally:
            failures = [
                outcome
                for outcome in await asyncio.gather(*in_flight, return_exceptions=True)
                if isinstance(outcome, BaseException)
            ]
        if failures:
            raise failures[0]

    def _room_for_another_batch(self, unsettled_batches: int) -> bool:
        """Time, D1 queries and subrequests left for one more batch at its most expensive.

        Rows left over stay due for the next tick (the operator sees them as backlog).
        """
        # Settles not yet sent (counted in full), the next batch, and the tick's record.
        unsettled = unsettled_batches * batch_cost(self.batch_size)
        queries = (
            self.store.statements + unsettled + batch_cost(self.batch_size) + RECORD_STATEMENTS
        )
        return (
            self.elapsed_ms() < self.budget_ms
            and queries <= self.max_queries
            and self.report.sends + self.batch_size <= self.max_sends
        )

    def _deliveries_due(self) -> bool:
        """This tick's settles wrote events, or the outbox had a delivery due (as its due
        queries said): a tick with nothing to notify spends nothing on it."""
        next_at = self.store.outbox_next_at
        return self.store.events_written > 0 or (next_at is not None and next_at <= self.clock())

    def _room_for_deliveries(self, unsettled_batches: int) -> bool:
        """Time, D1 queries and subrequests left for one more batch of deliveries at its most
        expensive; what is left waits in the outbox for the next tick."""
        cost = delivery_batch_cost(self.batch_size)
        queries = self.store.statements + (unsettled_batches + 1) * cost + RECORD_STATEMENTS
        sends = self.report.sends + self.report.webhook_sends + self.batch_size
        return (
            self.elapsed_ms() < self.budget_ms
            and queries <= self.max_queries
            and sends <= self.max_sends
        )

    def _counts(self) -> dict[str, int]:
        self.report.webhook_events = self.store.events_written
        self.report.d1_statements = self.store.statements
        self.report.d1_round_trips = self.store.round_trips
        return self.report.as_record()

    def _record(self, error: BaseException | None = None) -> list[Statement]:
        """The tick's record, built last so it counts the round trip that carries it."""
        self._counts()
        return history.record(
            self.store.db,
            kind="tick",
            at=self.now,
            duration_ms=self.elapsed_ms(),
            ended_at=self.clock(),
            report=self.report,
            error=error,
        )

    async def _record_failure(self, error: BaseException) -> None:
        """A failed tick's row: what it counted before it failed, and the exception's type.
        When the database is what failed, this fails too: the log line says the tick failed."""
        try:
            await self.store.record(lambda: self._record(error), RECORD_STATEMENTS)
        except Exception as also:
            log.warning("the failed tick could not be recorded: %s", type(also).__name__)
