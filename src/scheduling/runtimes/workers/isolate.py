"""What one isolate keeps between invocations, and the events workerd hands it.

The Services for the env (built again when the vars or bindings change) serve every
invocation, and the HTTP app built on them every request. Everything is imported here, at
the entry's top level: the routes, handlers, pages, jinja2 and the compiled templates land
in the memory snapshot with the runner, so an isolate's first page costs about what a later
one does (the README's Benchmarks: the top level against Cloudflare's FastAPI example).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from scheduling.app import App
from scheduling.runner.alarm import alarm
from scheduling.runtimes.workers.bridge import build_services, env_fingerprint
from scheduling.runtimes.workers.edge import build_app, to_core_request, to_workers_response
from scheduling.services import Services

Fingerprint = tuple[tuple[str, str], ...]

_services: dict[Fingerprint, Services] = {}
_apps: dict[Fingerprint, App] = {}


def services_for(env: Any) -> Services:
    key = env_fingerprint(env)
    if key not in _services:
        _services.clear()
        _apps.clear()
        _services[key] = build_services(env)
    return _services[key]


def app_for(env: Any) -> App:
    services = services_for(env)
    key = env_fingerprint(env)
    if key not in _apps:
        _apps[key] = build_app(services)
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
    services = services_for(env)
    return lambda installation_id, set_for: alarm(services, installation_id, set_for)
