"""The local runtime's alarm clocks: one per installation, in process, as a Worker with the
`SCHEDULE_CLOCK` binding has one Durable Object per installation (`serve` with
SCHEDULE_CLOCK=1).

Each clock keeps one alarm, a timer on the event loop, and runs the core's own clock logic
(`runner/alarm.py`) over it. As Durable Objects do: setting the alarm replaces it; a
time in the past fires at once; while an alarm runs, its clock reads no alarm unless one was
set since, and a wake-up that comes meanwhile waits for the running one to end (one alarm at
a time per installation). Each alarm is its own invocation: its own engine, its own six
connection slots and its own HTTP client's connections.

Timers live only as long as the process: `start()` reads D1 and arms every installation with
something live, so a restart (even after kill -9) picks up where the last run stopped.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import replace

from scheduling.app import App
from scheduling.domain.schedules import wake_for
from scheduling.limits import MAX_STORED_INTEGER
from scheduling.ports import HttpClient
from scheduling.repository.leases import read_wake_ups, wake_ups_from
from scheduling.runner.alarm import AlarmClock
from scheduling.runtimes.cpython.adapters import HttpxClient, outbound_client, shared_tls
from scheduling.services import log


class TimerAlarm:
    """One installation's alarm: a loop timer that calls `fire(due)` when it comes (`due`:
    its time, or when it was set if that was later, to measure how late it came)."""

    def __init__(self, now: Callable[[], int], fire: Callable[[int], None]) -> None:
        self.now = now
        self.fire = fire
        self.at: int | None = None
        self.due = 0  # when it should come: its time, or when it was set if that is later
        self._timer: asyncio.TimerHandle | None = None

    async def get_alarm(self) -> int | None:
        return self.at

    async def set_alarm(self, at: int) -> None:
        self.cancel()
        self.at = at
        self.due = max(at, self.now())  # a time in the past comes at once
        self._wait_for(at)

    def _wait_for(self, at: int) -> None:
        delay_s = max(0, at - self.now()) / 1000
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._come)

    def _come(self) -> None:
        at = self.at
        if at is None:
            return
        if self.now() < at:  # a loop timer may come a millisecond before the clock's time
            self._wait_for(at)
            return
        self.at, self._timer = None, None  # consumed: the alarm runs now
        self.fire(self.due)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.at, self._timer = None, None


class _Clock:
    """An installation's clock: its alarm, its core logic, its HTTP client."""

    def __init__(self, alarm: TimerAlarm, now: Callable[[], int]) -> None:
        self.alarm = alarm
        self.clock = AlarmClock(alarm, now)
        self.http: HttpClient | None = None
        self.ringing: asyncio.Task[None] | None = None
        self.waiting: int | None = None  # a wake-up that came while it rang


class LocalClocks:
    """The `ScheduleClocks` port of the local runtime, over `app`'s database and settings."""

    def __init__(self, app: App, *, http: Callable[[], HttpClient] | None = None) -> None:
        """`http` makes each installation's client (tests pass their own); by default each
        has its own client (`outbound_client`), closed by `stop()`."""
        self.app = app
        self.services = app.services
        self._make_http = http
        self._tls: ssl.SSLContext | None = None  # one for every installation's client
        self._clocks: dict[str, _Clock] = {}

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        return await self._clock(installation_id).clock.arm(wake_at)

    async def start(self) -> int:
        """Arm every installation with something live, from D1; returns how many."""
        rows = await read_wake_ups(self.services.db, MAX_STORED_INTEGER).all()
        lead = self.services.config.clock_lead_ms
        found = wake_ups_from(rows.results)
        for installation_id, due_at in found.items():
            await self.arm(installation_id, wake_for(due_at, lead))
        return len(found)

    async def stop(self) -> None:
        """Stop every timer and every alarm under way (a send already out is abandoned to its
        lease, as a killed isolate's would be); close the clients."""
        running = []
        for clock in self._clocks.values():
            clock.alarm.cancel()
            if clock.ringing is not None:
                clock.ringing.cancel()
                running.append(clock.ringing)
        await asyncio.gather(*running, return_exceptions=True)
        for clock in self._clocks.values():
            if isinstance(clock.http, HttpxClient):
                await clock.http.aclose()
        self._clocks.clear()

    async def idle(self) -> None:
        """Until no alarm is running (for tests and benchmarks)."""
        while running := [c.ringing for c in self._clocks.values() if c.ringing is not None]:
            await asyncio.gather(*running, return_exceptions=True)

    def next_wake_ups(self) -> dict[str, int]:
        """installation -> when its clock is set for (those set only)."""
        return {i: c.alarm.at for i, c in self._clocks.items() if c.alarm.at is not None}

    def _clock(self, installation_id: str) -> _Clock:
        clock = self._clocks.get(installation_id)
        if clock is None:
            now = self.services.clock.now_ms
            alarm = TimerAlarm(now, lambda set_for: self.wake(installation_id, set_for))
            clock = self._clocks[installation_id] = _Clock(alarm, now)
        return clock

    def wake(self, installation_id: str, set_for: int) -> None:
        """An alarm came: ring the clock, or after the alarm it is running."""
        clock = self._clock(installation_id)
        if clock.ringing is not None:
            clock.waiting = set_for if clock.waiting is None else min(clock.waiting, set_for)
            return
        clock.ringing = asyncio.create_task(
            self._ring(installation_id, clock, set_for), name=f"alarm-{installation_id}"
        )

    async def _ring(self, installation_id: str, clock: _Clock, set_for: int) -> None:
        try:
            await clock.clock.ring(lambda: self._alarm(installation_id, clock, set_for))
        except Exception:
            log.exception("installation %s: its alarm failed; it is retried", installation_id)
        finally:
            clock.ringing = None
        if clock.waiting is not None:
            waiting, clock.waiting = clock.waiting, None
            self.wake(installation_id, waiting)

    def _client(self) -> HttpxClient:
        """Its own connections, as an alarm has on Workers (six at once), to public addresses
        only outside development, as the runner's calls are."""
        if self._tls is None:
            self._tls = shared_tls()
        public_only = not self.services.config.is_development
        return outbound_client(max_connections=6, public_only=public_only, tls=self._tls)

    async def _alarm(self, installation_id: str, clock: _Clock, set_for: int) -> int | None:
        if clock.http is None:
            clock.http = self._make_http() if self._make_http else self._client()
        own = App(replace(self.services, http=clock.http))
        return await own.alarm(installation_id, set_for)
