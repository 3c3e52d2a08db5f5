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

from collections import Counter
from functools import partial

from scheduling.concurrency import gather_limited
from scheduling.domain.wake_times import WATCHDOG_GRACE_MS, WATCHDOG_HORIZON_MS, wake_for
from scheduling.limits import SUBREQUESTS
from scheduling.ports import ClockUnavailable, LimitReached, ScheduleClocks
from scheduling.repository import wake_ups
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
        await tick._send(DueRows(tick.leases, lag_ms=WATCHDOG_GRACE_MS))
        self.report.caught = self.report.claimed + self.report.refused_unsent

    async def _tell_clocks(self) -> None:
        """Each installation's clock told when it next has something due (the earliest
        first): one call each, `SEND_CONCURRENCY` at a time, as many as the subrequest budget
        leaves room for beside a batch of the watchdog's own sends."""
        tick, engine = self.tick, self.tick.engine
        config = tick.services.config
        statement = wake_ups.read_wake_ups(tick.trips.db, tick.clock() + WATCHDOG_HORIZON_MS)
        [result] = await tick.trips.send([statement])
        due = list(wake_ups.wake_ups_from(result.results).items())
        left = engine.budget.allowance(SUBREQUESTS) - engine.subrequests()
        room = max(0, left - config.max_rows_per_batch)
        if len(due) > room:
            self.report.limit_reached = 1  # the rest are told by the next tick
        told = due[:room]
        engine.clock_calls += len(told)
        calls = [partial(self._tell, installation_id, at) for installation_id, at in told]
        outcomes = Counter(await gather_limited(config.send_concurrency, calls))
        engine.clock_calls -= outcomes["refused"]
        self.report.clocks_rearmed += outcomes["moved"]
        if outcomes["unreachable"]:
            log.warning(
                "%d installations' clocks could not be told: the watchdog sends what they"
                " leave overdue",
                outcomes["unreachable"],
            )

    async def _tell(self, installation_id: str, due_at: int) -> str:
        try:
            moved = await self.clocks.arm(installation_id, wake_for(due_at, self.lead_ms))
        except ClockUnavailable:
            return "unreachable"
        except LimitReached as limit:  # refused unmade: the call is not counted
            self.tick.engine.reached(limit)
            return "refused"
        return "moved" if moved else "kept"
