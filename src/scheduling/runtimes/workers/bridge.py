"""Build the App from a Worker's env, and convert requests and responses at the edge."""

from __future__ import annotations

import logging
import sys
from typing import Any

from scheduling import events
from scheduling.app import App
from scheduling.config import SECRETS, VARIABLES, Configuration
from scheduling.http.requests import MAX_BODY_BYTES, Headers, Request, ascii_int
from scheduling.http.responses import Response
from scheduling.launch_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, MemoryRateLimiter
from scheduling.runtimes.workers.bindings import (
    DB_BINDING,
    LAUNCH_LIMITER_BINDING,
    SCHEDULE_CLOCK_BINDING,
    SEND_QUEUE_BINDING,
    BindingRateLimiter,
    UnboundDatabase,
    clock_binding,
    d1_binding,
    queue_binding,
    rate_limit_binding,
)
from scheduling.runtimes.workers.clock import WorkersClock
from scheduling.runtimes.workers.crypto import WebCrypto
from scheduling.runtimes.workers.d1 import D1Database
from scheduling.runtimes.workers.fetch_client import WorkersFetch
from scheduling.runtimes.workers.queue import WorkersQueue
from scheduling.runtimes.workers.schedule_clock import DurableClocks
from scheduling.runtimes.workers.streams import read_at_most
from scheduling.services import Services


def configure_logging() -> None:
    """Send the app's INFO lines to the Worker's logs (Python's default shows WARNING and up).

    workerd forwards Python's stdout and stderr to the Worker's console; it adds
    its own timestamps, so the format has none.
    """
    logger = logging.getLogger("scheduling")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    events.configure(sys.stderr)


def read_env(env: Any) -> dict[str, Any]:
    values = {}
    for name in (*VARIABLES, *SECRETS):
        value = getattr(env, name, None)
        if value is not None and str(value) != "undefined":
            values[name] = value if isinstance(value, int | float) else str(value)
    return values


def env_fingerprint(env: Any) -> tuple[tuple[str, str], ...]:
    """Identifies the configuration an App was built from (the env wrapper is new per request):
    its variables, and whether the optional rate limiting, queue and clock bindings are there."""
    limiter = "bound" if rate_limit_binding(env) is not None else "unbound"
    queue = "bound" if queue_binding(env) is not None else "unbound"
    clocks = "bound" if clock_binding(env) is not None else "unbound"
    variables = sorted((name, repr(value)) for name, value in read_env(env).items())
    return (
        *variables,
        (LAUNCH_LIMITER_BINDING, limiter),
        (SEND_QUEUE_BINDING, queue),
        (SCHEDULE_CLOCK_BINDING, clocks),
    )


def build_app(env: Any) -> App:
    """The App over this env. Nothing here raises for a missing or bad setting: each is
    reported by name (500 `misconfigured`) by the requests that need it."""
    binding = d1_binding(env)
    clock = WorkersClock()
    # Failed launches: counted by the binding across the location's isolates when there is
    # one, else in this isolate (also the binding's stand-in should it fail).
    in_isolate = MemoryRateLimiter(LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, clock)
    limiter_binding = rate_limit_binding(env)
    send_queue = queue_binding(env)
    clocks = clock_binding(env)
    services = Services(
        config=Configuration.from_mapping(read_env(env)),
        db=D1Database(binding) if binding is not None else UnboundDatabase(DB_BINDING),
        http=WorkersFetch(),
        clock=clock,
        make_crypto=WebCrypto,
        rate_limiter=(
            BindingRateLimiter(limiter_binding, in_isolate)
            if limiter_binding is not None
            else in_isolate
        ),
        queue=WorkersQueue(send_queue) if send_queue is not None else None,
        clocks=DurableClocks(clocks) if clocks is not None else None,
    )
    return App(services)


async def to_core_request(request: Any) -> Request:
    """The core's request. `request.url` keeps the path as sent (`%2F` stays encoded)."""
    method = getattr(request.method, "value", request.method)
    headers = Headers([(str(k), str(v)) for k, v in request.headers.items()])
    if method in ("GET", "HEAD"):
        body = b""
    elif _declared_length(headers) > MAX_BODY_BYTES:
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
    return Request(str(method), str(request.url), headers, body, client=client)


def _declared_length(headers: Headers) -> int:
    return ascii_int(headers.get("content-length")) or 0


def to_workers_response(response: Response) -> Any:
    from workers import Response as WorkersResponse

    return WorkersResponse(
        response.body if response.body else None,
        status=response.status,
        headers=list(response.headers),
    )
