"""One cron tick: batches rolled until nothing is due or the budget is spent, or, with an alarm
clock per installation, the clocks watched (each told what is due, and what none took sent
once overdue by `WATCHDOG_GRACE_MS`); then the deliveries due; then the purge of what ended
more than `RETENTION_DAYS` ago, in bounded steps within what is left; then its record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from functools import partial
from typing import Any

from scheduling.domain.schedules import WATCHDOG_GRACE_MS, WATCHDOG_HORIZON_MS, wake_for
from scheduling.domain.times import rfc3339
from scheduling.limits import SUBREQUESTS, TICK_TIME
from scheduling.ports import ClockUnavailable, LimitReached, ScheduleClocks, emit, gather_limited
from scheduling.repository import history
from scheduling.repository.installations import ENDED_KEPT_MS
from scheduling.repository.leases import read_wake_ups, wake_ups_from
from scheduling.repository.round_trips import RoundTrips
from scheduling.runner.engine import Budget, TickReport
from scheduling.runner.invocation import Invocation, RunnerInvocation
from scheduling.runner.sends import DueRows
from scheduling.services import Services, log

# -- the retention purge ---------------------------------------------------------------------------

DAY_MS = 86_400_000
# Rows of each kind one step deletes, the steps one tick takes at most, and the time after
# which it starts no more: up to 5,000 schedules a tick (7 million a day). Rows go in the
# order of their index, not their keys, so each costs a few random pages of writes: a step
# of 100 holds D1's one writer for a fraction of a second (bench/retention_bench.py), and
# the purge leaves most of every minute to the rest.
STEP_ROWS = 100
MAX_STEPS = 50
MAX_PURGE_MS = 5_000
# What a step deletes, as `history.Purged` names it, in the log line's order. Attempts go
# with their schedules: they alone never make a step worth another.
PURGED = ("schedules", "attempts", "deliveries", "proposals", "agent_keys")


async def purge(
    services: Services,
    trips: RoundTrips,
    budget: Budget,
    *,
    now: int,
    elapsed_ms: Callable[[], int],
) -> None:
    """Steps while there is more to purge, the budget allows one more and `MAX_STEPS` are
    not taken; logs one `retention_purged` line when anything went. Each step is a round
    trip of the invocation's (`trips`, which counts it)."""
    cutoff = now - services.config.retention_days * DAY_MS
    agents_cutoff = max(cutoff, now - ENDED_KEPT_MS)  # the sooner of the two
    purged: Counter[str] = Counter()
    steps = 0
    started = elapsed_ms()
    while (
        steps < MAX_STEPS
        and elapsed_ms() - started < MAX_PURGE_MS
        and budget.allows(
            elapsed_ms=elapsed_ms(), statements=trips.statements + history.STEP_STATEMENTS
        )
    ):
        try:
            results = await trips.send(history.step(trips.db, cutoff, STEP_ROWS, agents_cutoff))
        except LimitReached:
            break  # the invocation may send D1 nothing more; the rest waits for a tick
        step = asdict(history.purged(results))
        steps += 1
        purged.update(step)
        if max(step[kind] for kind in PURGED if kind != "attempts") < STEP_ROWS:
            break  # nothing more past the window
    if any(purged[kind] for kind in PURGED if kind != "attempts"):
        emit(
            "retention_purged",
            retention_days=services.config.retention_days,
            steps=steps,
            **{kind: purged[kind] for kind in PURGED},
        )


# -- the watchdog ----------------------------------------------------------------------------------


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
        statement = read_wake_ups(tick.trips.db, tick.clock() + WATCHDOG_HORIZON_MS)
        [result] = await tick.trips.send([statement])
        due = list(wake_ups_from(result.results).items())
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


# -- the tick --------------------------------------------------------------------------------------

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
    clocks instead (`Watchdog`); then delivers the notifications due."""

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
        await purge(
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
            [result] = await db.batch([history.read_latest_tick(db)])
            last = history.latest_tick_from(result.results)
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
