"""What one isolate keeps between invocations, and the events workerd hands it: requests, the
cron's tick, and an installation's Durable Object clock (`ScheduleClock` in `src/entry.py`).

The App an env describes (its variables and bindings, over the platform's adapters) is built
once and serves every invocation, built again when the vars or bindings change. Everything
is imported at the entry's top level, so it lands in the memory snapshot and an isolate's
first page costs about what a later one does.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from scheduling.app import App
from scheduling.config import RENAMED, SECRETS, VARIABLES, Configuration
from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, MemoryRateLimiter
from scheduling.http.requests import MAX_BODY_BYTES, Headers, Request, ascii_int
from scheduling.http.responses import Response
from scheduling.ports import configure_events
from scheduling.runner.alarm import AlarmClock
from scheduling.runtimes.workers.adapters import (
    D1Database,
    DurableClocks,
    WebCrypto,
    WorkersClock,
    WorkersFetch,
    read_at_most,
)
from scheduling.runtimes.workers.bindings import (
    DB_BINDING,
    LAUNCH_LIMITER_BINDING,
    SCHEDULE_CLOCK_BINDING,
    BindingRateLimiter,
    UnboundDatabase,
    bound,
)
from scheduling.services import Services

_apps: dict[tuple[tuple[str, str], ...], App] = {}


def app_for(env: Any) -> App:
    key = env_fingerprint(env)
    if key not in _apps:
        _apps.clear()
        _apps[key] = App(build_services(env))
    return _apps[key]


async def fetch(env: Any, request: Any, ctx: Any = None) -> Any:
    app = app_for(env)
    response = await app.handle(await to_core_request(request))
    later = app.after_request()
    if later is not None and ctx is not None:
        wait_until(ctx, later)
    return to_workers_response(response)


def wait_until(ctx: Any, work: Coroutine[Any, Any, None]) -> None:
    """Run `work` after the answer, the invocation kept alive for it (`ctx.waitUntil`), as the
    SDK hands a Python task to JavaScript: a proxy, destroyed once the task is done."""
    from pyodide.ffi import create_proxy

    task = asyncio.ensure_future(work)
    proxy = create_proxy(task)
    task.add_done_callback(lambda _: proxy.destroy())
    ctx.waitUntil(proxy)


async def scheduled(env: Any, controller: Any) -> None:
    await app_for(env).tick(int(controller.scheduledTime))


def alarm_of(env: Any) -> Callable[[str, int | None], Awaitable[int | None]]:
    """The runner's alarm over this env's services, for an installation's clock to ring."""
    return app_for(env).alarm


def configure_logging() -> None:
    """Send the app's INFO lines to the Worker's logs (workerd adds the timestamps)."""
    logger = logging.getLogger("scheduling")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    configure_events(sys.stderr)


def read_env(env: Any) -> dict[str, Any]:
    values = {}
    for name in (*VARIABLES, *RENAMED, *SECRETS):
        value = getattr(env, name, None)
        if value is not None and str(value) != "undefined":
            values[name] = value if isinstance(value, int | float) else str(value)
    return values


def env_fingerprint(env: Any) -> tuple[tuple[str, str], ...]:
    """Identifies the configuration an App was built from (the env wrapper is new per request):
    its variables, and whether the optional rate limiting and clock bindings are there."""
    variables = sorted((name, repr(value)) for name, value in read_env(env).items())
    optional = (LAUNCH_LIMITER_BINDING, SCHEDULE_CLOCK_BINDING)
    return (*variables, *((name, str(bound(env, name) is not None)) for name in optional))


def build_services(env: Any) -> Services:
    """The ports over this env. Nothing here raises for a missing or bad setting: each is
    reported by name (500 `misconfigured`) by the requests that need it, and by the tick."""
    database, limiter_binding, clocks = (
        bound(env, name) for name in (DB_BINDING, LAUNCH_LIMITER_BINDING, SCHEDULE_CLOCK_BINDING)
    )
    clock = WorkersClock()
    # Failed launches: counted by the binding across the location's isolates when there is
    # one, else in this isolate (also the binding's stand-in should it fail).
    in_isolate = MemoryRateLimiter(LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, clock)
    return Services(
        config=Configuration.from_mapping(read_env(env)),
        db=D1Database(database) if database is not None else UnboundDatabase(),
        http=WorkersFetch(),
        clock=clock,
        make_crypto=WebCrypto,
        rate_limiter=(
            BindingRateLimiter(limiter_binding, in_isolate)
            if limiter_binding is not None
            else in_isolate
        ),
        clocks=DurableClocks(clocks) if clocks is not None else None,
    )


INSTALLATION_KEY = "installation"  # the one key an object keeps besides its alarm


class ClockObject:
    """What one installation's `ScheduleClock` Durable Object does, over its `ctx`. It keeps its
    alarm (the `AlarmStore` of the core's clock) and the installation's id (an object cannot
    read its own name back): D1 stays the only truth."""

    def __init__(self, ctx: Any) -> None:
        self.now = WorkersClock().now_ms
        self.storage = ctx.storage
        self.clock = AlarmClock(self, self.now)
        self.installation_id: str | None = None
        # When the alarm last set should come (a time in the past fires at once).
        self.set_for: int | None = None

    async def get_alarm(self) -> int | None:
        at = await self.storage.getAlarm()
        return None if at is None else int(at)

    async def set_alarm(self, at: int) -> None:
        await self.storage.setAlarm(at)
        self.set_for = max(at, self.now())

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
        set_for = self.set_for
        await self.clock.ring(lambda: alarm(installation_id, set_for))


async def to_core_request(request: Any) -> Request:
    """The core's request. `request.url` keeps the path as sent (`%2F` stays encoded)."""
    # The JS request's own method: the SDK's `request.method` looks it up in an enum and
    # raises KeyError for one it has no name for (PROPFIND, PURGE, QUERY), which would answer
    # 500 where the router answers 405 with `Allow`.
    method = str(request.js_object.method)
    headers = Headers([(str(k), str(v)) for k, v in request.headers.items()])
    if method in ("GET", "HEAD"):
        body = b""
    elif (ascii_int(headers.get("content-length")) or 0) > MAX_BODY_BYTES:
        # Not read into the isolate's memory: a body one byte over the cap stands for it,
        # and the app refuses it as it refuses any body over the cap.
        body = bytes(MAX_BODY_BYTES + 1)
    else:
        # With no Content-Length (chunked) the size is known only by reading: one byte past
        # the cap is enough to refuse, and the rest is never read (nor waited for).
        body, _ = await read_at_most(request.body, MAX_BODY_BYTES + 1)
    # Cloudflare's edge sets CF-Connecting-IP to the connecting client's address, replacing
    # any a client sent; it is the only client identity a Worker has.
    client = headers.get("cf-connecting-ip") or None
    return Request(method, str(request.url), headers, body, client=client)


def to_workers_response(response: Response) -> Any:
    from workers import Response as WorkersResponse

    return WorkersResponse(
        response.body if response.body else None,
        status=response.status,
        headers=list(response.headers),
    )
