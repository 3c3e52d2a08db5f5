"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, or, with a queue, dispatch what is due to the queue's consumers;
then write the tick's record once and log its line.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.ports import Clock, LimitReached, Statement
from scheduling.repository import tick_record
from scheduling.repository.runner_store import RunnerStore
from scheduling.runner.batch import BatchRunner
from scheduling.runner.dispatch import Dispatch
from scheduling.runner.drain import Budget, Drain, DueRows
from scheduling.runner.report import TickReport
from scheduling.services import Services


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
    then writes its record once and logs its line."""

    def __init__(self, services: Services, invocation: Invocation) -> None:
        config = services.config
        self.services = services
        self.now = invocation.at
        self.started = invocation.started
        self.store = RunnerStore(services.db)
        self.report = TickReport(cron_delay_ms=invocation.cron_delay_ms)
        self.batches = BatchRunner(services, self.store, self.report, self.clock)
        self.drain = Drain(
            self.batches,
            self.store,
            self.report,
            now=self.now,
            clock=self.clock,
            batch_size=config.max_rows_per_tick,
            concurrency=config.send_concurrency,
            budget=Budget.of(services),
            new_token=lambda: services.crypto.random_token(),  # TOKEN_KEY read only when needed
        )

    def clock(self) -> int:
        """The tick's instant advanced by the real time spent since the invocation began.

        Every decision within the tick reads this: lateness, leases, retries.
        """
        return self.now + max(0, self.services.clock.now_ms() - self.started)

    def elapsed_ms(self) -> int:
        return self.clock() - self.now

    async def run(self) -> TickReport:
        queue = self.services.queue
        if queue is None:
            await self.drain.run(DueRows(self.store))
        else:
            dispatch = Dispatch(
                self.services, self.store, self.report, self.clock, queue, self.batches.reached
            )
            await dispatch.run()
        try:
            await self.store.record(self._record)
        except LimitReached as limit:  # the record waits for a tick that can write it
            self.batches.reached(limit)
        emit("runner_tick", at=rfc3339(self.now), duration_ms=self.elapsed_ms(), **self._counts())
        return self.report

    def _counts(self) -> dict[str, int]:
        self.report.d1_statements = self.store.statements
        self.report.d1_round_trips = self.store.round_trips
        return self.report.as_record()

    def _record(self) -> Statement:
        """The tick's record, built last so it counts the round trip that carries it."""
        return tick_record.record(self.store.db, self.now, self.elapsed_ms(), self._counts())
