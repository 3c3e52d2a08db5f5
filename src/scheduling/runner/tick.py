"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, or, with a queue, dispatch what is due to the queue's consumers;
then deliver the webhooks the outbox has due (through as many slots, within what is left of
the budget); then write the tick's record once (its row of the tick history, in the same
round trip as the totals it adds to) and log its line. A tick that fails records its row
too, with the exception's type, in one more write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.limits import RECORD_STATEMENTS
from scheduling.ports import Clock, LimitReached, Statement
from scheduling.repository.runner_store import RunnerStore
from scheduling.runner import history
from scheduling.runner.batch import BatchRunner
from scheduling.runner.budget import Budget
from scheduling.runner.deliveries import DeliveryRunner
from scheduling.runner.dispatch import Dispatch
from scheduling.runner.drain import Drain, DueRows
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
    """Sends what is due (inline), or, with a queue, dispatches it to the queue's consumers;
    delivers the webhooks due; then records its row of the history and logs its line."""

    def __init__(self, services: Services, invocation: Invocation) -> None:
        config = services.config
        self.services = services
        self.now = invocation.at
        self.started = invocation.started
        self.store = RunnerStore(services.db)
        self.report = TickReport(cron_delay_ms=invocation.cron_delay_ms)
        self.batches = BatchRunner(services, self.store, self.report, self.clock)
        budget = Budget.of(services, reserved_queries=RECORD_STATEMENTS)
        self.concurrency = config.send_concurrency
        self.drain = Drain(
            self.batches,
            self.store,
            self.report,
            now=self.now,
            clock=self.clock,
            batch_size=config.max_rows_per_tick,
            concurrency=config.send_concurrency,
            budget=budget,
            new_token=lambda: services.crypto.random_token(),  # TOKEN_KEY read only when needed
        )
        self.deliveries = DeliveryRunner(
            services,
            self.store,
            self.report,
            self.clock,
            now=self.now,
            budget=budget,
            on_limit=self.batches.reached,
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
            await self._work()
            await self._write_record()
        except Exception as error:
            await self._record_failure(error)
            raise
        emit("runner_tick", at=rfc3339(self.now), duration_ms=self.elapsed_ms(), **self._counts())
        return self.report

    async def _work(self) -> None:
        queue = self.services.queue
        if queue is None:
            await self.drain.run(DueRows(self.store))
        else:
            dispatch = Dispatch(
                self.services, self.store, self.report, self.clock, queue, self.batches.reached
            )
            await dispatch.run()
        if self.batches.limit is None and self.deliveries.due():
            await self.deliveries.run(asyncio.Semaphore(self.concurrency))

    async def _write_record(self) -> None:
        try:
            await self.store.record(self._record, RECORD_STATEMENTS)
        except LimitReached as limit:  # the record waits for a tick that can write it
            self.batches.reached(limit)

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
