"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, or, with an alarm clock per installation, watch the clocks
(`watchdog.py`); then deliver the notifications the outbox has due; then purge what is past the
retention window (`purge.py`), within what is left; then record itself (`invocation.py`).
"""

from __future__ import annotations

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.runner import purge
from scheduling.runner.invocation import Invocation, RunnerInvocation
from scheduling.runner.report import TickReport
from scheduling.runner.send_work import DueRows
from scheduling.runner.watchdog import Watchdog
from scheduling.services import Services

# The window: how far a tick's `scheduledTime` may lie from the wall clock, whoever asks:
# the cron, the Worker's `scheduled()` under `wrangler dev --test-scheduled` (whose
# `/__scheduled?time=` any page a developer opens can ask for, with no Host or Origin check),
# or the local `/__scheduled`.
#
# Ahead: far enough to run the tick of a schedule made a few minutes ahead without waiting
# for it, and never past MAX_LATENESS_MS, so a moved tick may send a schedule early but never
# ends one that is not yet due as too late (a tick 300 days ahead ended every pending schedule
# unsent). Behind: the tick runs at the wall clock anyway, as a late delivery does; a day
# bounds the delay it records.
MAX_TICK_AHEAD_MS = 15 * 60 * 1000
MAX_TICK_BEHIND_MS = 24 * 60 * 60 * 1000


class TickTimeRefused(ValueError):
    """A tick asked for at an instant outside the window: nothing run."""


def window_problem(scheduled_time: int, now: int, max_lateness_ms: int) -> str | None:
    """None when a tick may stand for `scheduled_time` at `now`, else what the window is."""
    ahead = min(MAX_TICK_AHEAD_MS, max_lateness_ms)
    if now - MAX_TICK_BEHIND_MS <= scheduled_time <= now + ahead:
        return None
    return window_words(max_lateness_ms)


def window_words(max_lateness_ms: int) -> str:
    return (
        f"time must be epoch milliseconds at most"
        f" {min(MAX_TICK_AHEAD_MS, max_lateness_ms) // 1000} s after now"
        f" and at most {MAX_TICK_BEHIND_MS // 3_600_000} h before it"
    )


async def tick(services: Services, scheduled_time: int) -> dict[str, int]:
    """One runner tick for the cron invocation of `scheduled_time` (epoch ms), as
    `scheduled()` and the local cron run it; it runs at that instant or, delivered late,
    at the wall clock. A `scheduled_time` too far from the wall clock is refused
    (`TickTimeRefused`), nothing run, whoever asked."""
    now = services.clock.now_ms()
    problem = window_problem(scheduled_time, now, services.config.max_lateness_ms)
    if problem is not None:
        emit("runner_tick_refused", scheduled_time=scheduled_time, now=now)
        raise TickTimeRefused(problem)
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
    """Sends what is due (inline), or, with an alarm clock per installation, watches the
    clocks instead (`watchdog.py`); then delivers the notifications due."""

    kind = "tick"
    log_event = "runner_tick"

    def __init__(self, services: Services, invocation: Invocation) -> None:
        # The watchdog claims under the per-installation cap, as the clocks' alarms do.
        cap = None if services.clocks is None else services.config.max_in_flight_per_installation
        report = TickReport(cron_delay_ms=invocation.cron_delay_ms)
        super().__init__(services, invocation, report, cap=cap)

    async def _work(self) -> None:
        clocks = self.services.clocks
        if clocks is not None:
            await Watchdog(self, clocks).run()
        else:
            await self._send(DueRows(self.leases))
        await self._deliver()
        await purge.purge(
            self.services, self.trips, self.engine.budget, now=self.now, elapsed_ms=self.elapsed_ms
        )
