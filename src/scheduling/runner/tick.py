"""One runner tick: roll batches (claim, send in slots, settle) until nothing is due or the
tick's budget is spent, or, with an alarm clock per installation, watch the clocks
(`watchdog.py`); then deliver the notifications the outbox has due; then purge what is past the
retention window (`purge.py`), within what is left; then record itself (`invocation.py`).

The cron's backstop (`Ticks`): with the cron stopped nothing would be sent until someone
looked, so any request a process or isolate serves, /healthz polled by an uptime monitor
among them, notices a last tick over two minutes old and runs one tick of its own after
answering, within a shorter budget, recorded as the kind `backstop`. Before the cron's first
tick there is nothing to go by: no backstop.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from scheduling.domain.localtime import rfc3339
from scheduling.events import emit
from scheduling.limits import TICK_TIME
from scheduling.repository import tick_history
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


# The cron fires every minute: a last tick older than two is a cron that has stopped.
CRON_STOPPED_AFTER_MS = 2 * 60_000
# No new work past this: Workers keeps a request's `waitUntil` work 30 s after its answer,
# and the last sends may take REQUEST_TIMEOUT_MS more.
BACKSTOP_TIME_MS = 15_000


class Backstop(Tick):
    """A tick a request ran because the cron's last one is over two minutes old."""

    kind = "backstop"
    log_event = "runner_backstop"

    def __init__(self, services: Services, invocation: Invocation) -> None:
        super().__init__(services, invocation)
        allowed = self.engine.budget.allowed
        allowed[TICK_TIME.name] = min(allowed[TICK_TIME.name], BACKSTOP_TIME_MS)


class Ticks:
    """One process's or isolate's ticks: the cron's, and the backstop a request runs when the
    cron has stopped; one at a time. The last tick's time is kept here a while, so a request
    reads the database for it at most once per two minutes."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.running = False
        self.quiet_until = 0  # no look at the history before this instant

    async def cron(self, scheduled_time: int) -> dict[str, int]:
        self.running = True
        try:
            return await tick(self.services, scheduled_time)
        finally:
            self.running = False
            self.quiet_until = self.services.clock.now_ms() + CRON_STOPPED_AFTER_MS

    def after_request(self) -> Coroutine[Any, Any, None] | None:
        """What to run once a request is answered (`ctx.waitUntil` on Workers, a task locally):
        a look at the history and, when the cron has stopped, a backstop tick. None (nearly
        always) when a tick runs here now or was seen recently."""
        now = self.services.clock.now_ms()
        if self.running or now < self.quiet_until:
            return None
        self.running = True
        self.quiet_until = now + CRON_STOPPED_AFTER_MS
        return self._backstop(now)

    async def _backstop(self, now: int) -> None:
        try:
            db = self.services.db
            [result] = await db.batch([tick_history.read_latest_tick(db)])
            last = tick_history.latest_tick_from(result.results)
            if last is None:  # the cron has not started yet (/healthz says so once work is due)
                return
            if now - last <= CRON_STOPPED_AFTER_MS:
                self.quiet_until = last + CRON_STOPPED_AFTER_MS
                return
            emit("runner_cron_stopped", last_tick_at=rfc3339(last))
            await Backstop(self.services, Invocation.begin(self.services.clock, now)).run()
        except Exception as exc:  # its answer is sent: the log is where it can be told
            emit("runner_backstop_failed", error=type(exc).__name__)
        finally:
            self.running = False
