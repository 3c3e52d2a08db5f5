"""The cron's tick when each installation has an alarm clock: the watchdog.

Each minute it tells the clock of every installation with something due before its next run
(and a minute more) when that is, and counts the clocks that had to move (asleep past it, or
unset: an alarm lost, a clock never told). Then it sends itself what has been overdue for
more than `WATCHDOG_GRACE_MS`, which no clock took, under the same compare-and-set claim and
the same per-installation cap as the clocks' alarms, so nothing is sent twice and no Dee Wan
sees more than MAX_IN_FLIGHT_PER_INSTALLATION of our requests at once. Both should count
zero; the operator sees them in the tick history and /admin/metrics.
"""

from __future__ import annotations

from scheduling.domain.wake_ups import WATCHDOG_GRACE_MS, WATCHDOG_HORIZON_MS, wake_for
from scheduling.ports import ClockUnavailable, LimitReached, ScheduleClocks
from scheduling.repository import wake_ups
from scheduling.runner.dispatch import Dispatch
from scheduling.runner.invocation import RunnerInvocation
from scheduling.runner.send_work import DueRows
from scheduling.services import log


class Watchdog:
    def __init__(self, tick: RunnerInvocation, clocks: ScheduleClocks) -> None:
        self.tick = tick
        self.clocks = clocks
        self.report = tick.report
        self.lead_ms = tick.services.config.clock_lead_ms

    async def run(self) -> None:
        self.report.watchdog = 1
        await self._tell_clocks()
        tick = self.tick
        if tick.engine.limit is not None:
            return
        queue = tick.services.queue
        if queue is None:
            await tick._send(DueRows(tick.leases, lag_ms=WATCHDOG_GRACE_MS))
            self.report.caught = self.report.claimed + self.report.refused_unsent
        else:
            await Dispatch(tick.engine, tick.marks, queue, lag_ms=WATCHDOG_GRACE_MS).run()
            self.report.caught = self.report.dispatched

    async def _tell_clocks(self) -> None:
        """Each installation's clock told when it next has something due (one call each)."""
        tick, engine = self.tick, self.tick.engine
        statement = wake_ups.read_wake_ups(tick.trips.db, tick.clock() + WATCHDOG_HORIZON_MS)
        [result] = await tick.trips.send([statement])
        unreachable = 0
        for installation_id, due_at in wake_ups.wake_ups_from(result.results).items():
            if not engine.budget.allows(
                elapsed_ms=tick.elapsed_ms(),
                statements=tick.trips.statements,
                sends=engine.subrequests() + 1,
            ):
                engine.report.limit_reached = 1
                break
            engine.clock_calls += 1
            try:
                moved = await self.clocks.arm(installation_id, wake_for(due_at, self.lead_ms))
            except ClockUnavailable:
                unreachable += 1
                continue
            except LimitReached as limit:
                engine.clock_calls -= 1
                engine.reached(limit)
                return
            self.report.clocks_rearmed += int(moved)
        if unreachable:
            log.warning(
                "%d installations' clocks could not be told: the watchdog sends what they"
                " leave overdue",
                unreachable,
            )
