"""The Worker entry: route fetch to the app, run one runner tick from the cron trigger, and
consume the runner's queue messages (when `SEND_QUEUE` and this Worker's consumer are set).

What this top level imports lands in the memory snapshot Cloudflare takes at deploy, and
counts against the startup limit: the runner's path only, which every invocation needs. The
HTTP app is imported by an isolate's first request (`runtimes/workers/isolate.py`).
"""

from typing import Any

from workers import WorkerEntrypoint

from scheduling.runtimes.workers import isolate
from scheduling.runtimes.workers.bridge import configure_logging

configure_logging()


class Default(WorkerEntrypoint):  # type: ignore[misc]
    async def fetch(self, request: Any) -> Any:
        return await isolate.fetch(self.env, request)

    async def scheduled(self, controller: Any, env: Any = None, ctx: Any = None) -> None:
        await isolate.scheduled(self.env, controller)

    async def queue(self, batch: Any, env: Any = None, ctx: Any = None) -> None:
        await isolate.queue(self.env, batch)
