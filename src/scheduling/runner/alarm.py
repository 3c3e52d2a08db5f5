"""An installation's alarm clock, and its alarm: the runner's second kind of invocation.

Told a wake-up, the clock moves earlier, never later. Rung, the alarm waits for its
installation's earliest due second, claims and sends its due rows within
MAX_IN_FLIGHT_PER_INSTALLATION, delivers the events its settles wrote, and answers its next
wake-up, read from D1, for the clock to set. A failed alarm sets a retry before it fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from scheduling.domain.records import DueRow, SettledClaim
from scheduling.domain.schedules import HELD_BACK_RETRY_MS, retry_after_failure, wake_for
from scheduling.limits import batch_cost
from scheduling.ports import AlarmStore, LimitReached, emit
from scheduling.repository.leases import Leases, next_due_from, read_next_due
from scheduling.runner.engine import TickReport
from scheduling.runner.invocation import Invocation, RunnerInvocation
from scheduling.runner.sends import Claimed, RowSource, SendWork
from scheduling.services import Services

# -- the clock -------------------------------------------------------------------------------------


class AlarmClock:
    def __init__(self, store: AlarmStore, now: Callable[[], int]) -> None:
        self.store = store
        self.now = now
        self.failures = 0  # alarms failed in a row
        self.ringing = False
        # A told time and the alarm's own next wake-up are each read, compared and set
        # under it, so neither overwrites the other with a later time.
        self._lock = asyncio.Lock()

    async def arm(self, at: int) -> bool:
        """Wake at `at` or earlier. True when the clock would not have woken in time without
        this: it was unset or set later, and no alarm of its is running (a running alarm
        reads D1 for its next wake-up as it ends)."""
        async with self._lock:
            current = await self.store.get_alarm()
            if current is not None and current <= at:
                return False
            await self.store.set_alarm(at)
            return not self.ringing

    async def ring(self, alarm: Callable[[], Awaitable[int | None]]) -> int | None:
        """Run `alarm` (it answers its next wake-up, None when nothing is live) and set it;
        when it fails, set a retry and raise."""
        self.ringing = True
        try:
            next_at = await alarm()
        except Exception:
            self.failures += 1
            self.ringing = False
            await self.arm(retry_after_failure(self.now(), self.failures))
            raise
        finally:
            self.ringing = False
        self.failures = 0
        if next_at is not None:
            await self.arm(next_at)
        return next_at


# -- the alarm -------------------------------------------------------------------------------------

# An alarm reads this many of its installation's due rows at once and claims them a cap's
# worth at a time, each on what was read (the claim's compare-and-set): one read for a
# hundred rows rather than one a batch, when a burst is all D1's writer can take.
READ_AHEAD = 100
# An alarm with events to deliver stops claiming after sending this long, delivers them once
# what it holds has settled, and sends on: a burst's refusals are not told only at its end.
TELL_AFTER_MS = 2_000


class InstallationRows(RowSource):
    """An alarm's source: its installation's due rows, never more at once than the cap leaves
    room for beside this invocation's own claims in flight. Rows the cap held back (another
    runner's claims fill it) wait for one of its own batches to settle; with none of its own
    in flight, the source ends (`blocked`) and the alarm tries again a little later. What was
    read ahead is claimed as read while every claim wins; once one does not (held back, or
    changed since the read), the rest is read again."""

    # Not won is waiting, whoever holds the cap's claims: no statement to tell them apart.
    apart = False

    def __init__(
        self, leases: Leases, installation_id: str, cap: int, pause: Callable[[], bool]
    ) -> None:
        self.leases = leases
        self.installation_id = installation_id
        self.cap = cap
        self.pause = pause  # True: end this pass here, to deliver what it wrote
        self.live = 0  # this invocation's claims not yet settled
        self.held = False
        self.blocked = False
        self.taken = 0  # rows claimed or ended unsent
        self.ahead: list[DueRow] = []  # read, not yet claimed

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow] | None:
        while self.held or self.live >= self.cap:
            waiting = work.engine.unsettled()
            if not waiting:
                self.blocked = True
                return None
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            self.held = False
            now = work.clock()
        if self.pause():
            return None
        if not self.ahead:
            self.ahead = await self.leases.due_for(self.installation_id, now, READ_AHEAD)
        room = min(limit, self.cap - self.live)
        rows, self.ahead = self.ahead[:room], self.ahead[room:]
        return rows or None

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        self.live += len(claimed.won)
        self.taken += len(claimed.won) + len(claimed.refused)
        if claimed.held:
            self.held = True
            self.ahead = []  # what was read may have changed: read it again

    def settled(self, claims: Sequence[SettledClaim]) -> None:
        self.live -= len(claims)


async def alarm(services: Services, installation_id: str, set_for: int | None) -> int | None:
    """One alarm of an installation's clock (a Durable Object's `alarm()`, or a local timer),
    set for `set_for` when known: sends what the installation has due, and returns when its
    clock should next wake (None: nothing of it is live)."""
    try:
        ringing = Alarm(services, installation_id, set_for)
        await ringing.run()
    except Exception as exc:
        # The type only, as for a tick; its clock sets a retry (`AlarmClock.ring`).
        emit("runner_alarm_failed", installation_id=installation_id, error=type(exc).__name__)
        raise
    return ringing.next_wake


class Alarm(RunnerInvocation):
    kind = "alarm"
    log_event = "runner_alarm"

    def __init__(self, services: Services, installation_id: str, set_for: int | None) -> None:
        wall = services.clock.now_ms()
        # Its instant is the wall clock's, never the time it was set for: ahead of the
        # wall, it could take a row before its due second.
        report = TickReport(cron_delay_ms=0 if set_for is None else max(0, wall - set_for))
        super().__init__(
            services,
            Invocation(scheduled_time=wall, started=wall),
            report,
            cap=services.config.max_in_flight_per_installation,
        )
        self.installation_id = installation_id
        self.lead_ms = services.config.clock_lead_ms
        self.in_flight_cap = services.config.max_in_flight_per_installation
        self.next_wake: int | None = None

    async def _work(self) -> None:
        while True:
            try:
                due = await self._next_due()
            except LimitReached as limit:  # nothing more of D1 here: a fresh invocation goes on
                self.engine.reached(limit)
                self.next_wake = self.clock()
                return
            now = self.clock()
            if due is None:
                return
            if wake_for(due, self.lead_ms) > now or not self._time_for(due - now):
                self.next_wake = wake_for(due, self.lead_ms)
                return
            if due > now:
                await asyncio.sleep((due - now) / 1000)
                self.report.waited_ms += self.clock() - now
            pause = partial(self._time_to_tell, self.clock())
            rows = InstallationRows(self.leases, self.installation_id, self.in_flight_cap, pause)
            # Its installation's latest send noted once a pass, not with each batch of six.
            await self._send(rows, last_sent_later=True)
            fresh = self.outbox.take_fresh()
            if fresh:
                await self._deliver(fresh)
            if self.engine.limit is not None:
                self.next_wake = self.clock()  # a fresh invocation goes on at once
                return
            if rows.blocked or not rows.taken:
                # Another runner holds the cap's claims (or took the rows first): again soon.
                self.next_wake = self.clock() + HELD_BACK_RETRY_MS
                return

    def _time_to_tell(self, since: int) -> bool:
        """Events of this pass to deliver, and sending since `since` for `TELL_AFTER_MS`."""
        return bool(self.outbox.fresh) and self.clock() - since >= TELL_AFTER_MS

    async def _next_due(self) -> int | None:
        statement = read_next_due(self.trips.db, self.installation_id)
        [result] = await self.trips.send([statement])
        return next_due_from(result.results)

    def _time_for(self, wait_ms: int) -> bool:
        """Room in the budget to wait `wait_ms`, then claim and settle a batch of its cap and
        read its next wake-up."""
        cap = self.in_flight_cap
        return self.engine.allows(
            elapsed_ms=max(0, wait_ms), statements=batch_cost(cap, capped=True) + 1, sends=cap
        )

    def _log_fields(self) -> dict[str, Any]:
        return {"installation_id": self.installation_id}
