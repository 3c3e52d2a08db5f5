"""The Worker entry: route fetch to the app, run one runner tick from the cron trigger,
consume the runner's queue messages (when `SEND_QUEUE` and this Worker's consumer are set),
and, with the `SCHEDULE_CLOCK` binding, an alarm clock per installation (`ScheduleClock`)."""

from typing import Any

from workers import DurableObject, WorkerEntrypoint

from scheduling.app import App
from scheduling.runtimes.workers.bridge import (
    build_app,
    configure_logging,
    env_fingerprint,
    to_core_request,
    to_workers_response,
)
from scheduling.runtimes.workers.queue import WorkersMessage
from scheduling.runtimes.workers.schedule_clock import ClockObject

configure_logging()

_apps: dict[tuple[tuple[str, str], ...], App] = {}  # one per isolate; rebuilt if the vars change


def _app_for(env: Any) -> App:
    key = env_fingerprint(env)
    if key not in _apps:
        _apps.clear()
        _apps[key] = build_app(env)
    return _apps[key]


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        app = _app_for(self.env)
        return to_workers_response(await app.handle(await to_core_request(request)))

    async def scheduled(self, controller: Any, env: Any = None, ctx: Any = None) -> None:
        await _app_for(self.env).tick(int(controller.scheduledTime))

    async def queue(self, batch: Any, env: Any = None, ctx: Any = None) -> None:
        messages = [WorkersMessage(message) for message in batch.messages]
        await _app_for(self.env).consume(messages)


class ScheduleClock(DurableObject):  # type: ignore[misc]
    """One installation's alarm clock (bound as `SCHEDULE_CLOCK`, one object per installation,
    named by its id): `arm` over RPC moves its alarm earlier, `alarm` sends what is due."""

    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self.object = ClockObject(self.ctx)

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        return await self.object.arm(str(installation_id), int(wake_at))

    async def alarm(self, alarm_info: Any = None) -> None:
        await self.object.ring(_app_for(self.env).alarm)
