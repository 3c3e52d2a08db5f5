"""The Worker entry: route fetch to the app, run one runner tick from the cron trigger, and,
with the `SCHEDULE_CLOCK` binding, an alarm clock per installation (`ScheduleClock`).

What this top level imports (the whole app, `runtimes/workers/isolate.py`) lands in the memory
snapshot taken at deploy, so an isolate's first request imports nothing.
"""

from typing import Any

from workers import DurableObject, WorkerEntrypoint

from scheduling.runtimes.workers import isolate

isolate.configure_logging()


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        return await isolate.fetch(self.env, request, self.ctx)

    async def scheduled(self, controller: Any, env: Any = None, ctx: Any = None) -> None:
        await isolate.scheduled(self.env, controller)


class ScheduleClock(DurableObject):  # type: ignore[misc]
    """One installation's alarm clock (bound as `SCHEDULE_CLOCK`, one object per installation,
    named by its id): `arm` over RPC moves its alarm earlier, `alarm` sends what is due."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.object = isolate.ClockObject(self.ctx)

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        return await self.object.arm(str(installation_id), int(wake_at))

    async def alarm(self, alarm_info: Any = None) -> None:
        await self.object.ring(isolate.alarm_of(self.env))
