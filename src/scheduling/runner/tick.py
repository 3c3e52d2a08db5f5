"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, or, with a queue, dispatch what is due to the queue's consumers;
then deliver the webhooks the outbox has due; then purge what is past the retention window
(`retention.py`), within what is left; then record itself (`invocation.py`).
"""

from __future__ import annotations

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.runner import retention
from scheduling.runner.dispatch import Dispatch
from scheduling.runner.drain import DueRows
from scheduling.runner.invocation import Invocation, RunnerInvocation
from scheduling.runner.report import TickReport
from scheduling.services import Services


async def tick(services: Services, scheduled_time: int) -> dict[str, int]:
    """One runner tick for the cron invocation of `scheduled_time` (epoch ms), as
    `scheduled()` and the local cron run it; it runs at that instant or, delivered late,
    at the wall clock."""
    invocation = Invocation.begin(services.clock, scheduled_time)
    try:
        return await run_tick(services, invocation)
    except Exception as exc:
        # The type only: a message could quote a row. /admin/status shows the missing ticks.
        emit(
            "runner_tick_failed",
            at=rfc3339(invocation.at),
            cron_delay_ms=invocation.cron_delay_ms,
            error=type(exc).__name__,
        )
        raise


async def run_tick(services: Services, invocation: Invocation) -> dict[str, int]:
    """Run one tick for `invocation`; returns its counts, as recorded and logged."""
    return (await Tick(services, invocation).run()).as_record()


class Tick(RunnerInvocation):
    """Sends what is due (inline), or, with a queue, dispatches it to the queue's consumers;
    then delivers the webhooks due."""

    kind = "tick"
    log_event = "runner_tick"

    def __init__(self, services: Services, invocation: Invocation) -> None:
        super().__init__(services, invocation, TickReport(cron_delay_ms=invocation.cron_delay_ms))

    async def _work(self) -> None:
        queue = self.services.queue
        if queue is None:
            await self.drain.run(DueRows(self.store))
        else:
            dispatch = Dispatch(
                self.services, self.store, self.report, self.clock, queue, self.batches.reached
            )
            await dispatch.run()
        await self._deliver()
        await retention.purge(
            self.services, self.store, self.drain.budget, now=self.now, elapsed_ms=self.elapsed_ms
        )
