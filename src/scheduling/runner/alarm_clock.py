"""One installation's alarm clock, over whatever keeps its one alarm: a Durable Object's
storage in a Worker, a timer in the local runtime (`AlarmStore`).

Told a wake-up, it moves earlier, never later, so it is never later than any due time it was
told of. Rung, it runs the alarm (`runner/alarm.py`) and sets its next wake-up from what the
alarm read in D1, unless it was told of an earlier one meanwhile. An alarm that fails sets a
retry before the failure ends the invocation: the platform's own retries of a throwing alarm
stop after six, this chain never does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from scheduling.domain.wake_times import retry_after_failure
from scheduling.ports import AlarmStore


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
