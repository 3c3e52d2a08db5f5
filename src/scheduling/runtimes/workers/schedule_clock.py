"""The installations' alarm clocks on Durable Objects: the `SCHEDULE_CLOCK` binding as the
core's `ScheduleClocks` port, and what the `ScheduleClock` class of `src/entry.py` does.

One object per installation, named by its id (`getByName`). It keeps nothing but its one
alarm (the time of its next wake-up) and the installation's id it was named by (an object
cannot read its own name back): D1 stays the only truth. Told a time over RPC (`arm`), it
moves its alarm earlier, never later; its `alarm()` runs the core's alarm for that
installation (its own invocation: its own six connections and allowances) and sets the next
wake-up from what the alarm read in D1 (`runner/alarm.py`). An `alarm()` that fails
sets a retry before it raises: the platform retries a throwing alarm six times at most.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pyodide.ffi import JsException

from scheduling.ports import ClockUnavailable
from scheduling.runner.alarm import AlarmClock
from scheduling.runtimes.workers.adapters import WorkersClock
from scheduling.runtimes.workers.bindings import refusal

# The one key an object keeps in its storage besides its alarm.
INSTALLATION_KEY = "installation"


class DurableClocks:
    """`ScheduleClocks` over the Durable Object namespace binding (the SDK's wrapper)."""

    def __init__(self, binding: Any) -> None:
        self._binding = binding

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        try:
            stub = self._binding.getByName(installation_id)
            return bool(await stub.arm(installation_id, wake_at))
        except JsException as exc:
            failed = ClockUnavailable(getattr(exc, "name", "the clock did not answer"))
            raise refusal(str(exc), failed) from None


class StorageAlarm:
    """`AlarmStore` over a Durable Object's storage (`ctx.storage`, the SDK's wrapper)."""

    def __init__(self, storage: Any, now: Callable[[], int]) -> None:
        self._storage = storage
        self._now = now
        # When the alarm last set should come (its time, or when it was set if that was
        # later: a time in the past fires at once), while this instance lives.
        self.set_for: int | None = None

    async def get_alarm(self) -> int | None:
        at = await self._storage.getAlarm()
        return None if at is None else int(at)

    async def set_alarm(self, at: int) -> None:
        await self._storage.setAlarm(at)
        self.set_for = max(at, self._now())


class ClockObject:
    """What one `ScheduleClock` Durable Object does, over its `ctx`."""

    def __init__(self, ctx: Any) -> None:
        now = WorkersClock().now_ms
        self.storage = ctx.storage
        self.alarm_store = StorageAlarm(self.storage, now)
        self.clock = AlarmClock(self.alarm_store, now)
        self.installation_id: str | None = None

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        if self.installation_id != installation_id:
            if await self.storage.get(INSTALLATION_KEY) != installation_id:
                await self.storage.put(INSTALLATION_KEY, installation_id)
            self.installation_id = installation_id
        return await self.clock.arm(int(wake_at))

    async def ring(self, alarm: Callable[[str, int | None], Awaitable[int | None]]) -> None:
        """The object's `alarm()`: the core's alarm for its installation (`alarm`), then its
        next wake-up set. An object never told has nothing to do."""
        if self.installation_id is None:
            stored = await self.storage.get(INSTALLATION_KEY)
            self.installation_id = None if stored is None else str(stored)
        installation_id = self.installation_id
        if installation_id is None:
            return
        set_for = self.alarm_store.set_for
        await self.clock.ring(lambda: alarm(installation_id, set_for))
