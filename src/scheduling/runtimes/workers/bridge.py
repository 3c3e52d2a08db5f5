"""The Services a Worker's env describes, and what every invocation of the isolate shares.

Everything here is on the path of the cron and alarm invocations, so the entry imports it at
its top level and it lands in the memory snapshot. The HTTP app is in `edge.py`."""

from __future__ import annotations

import logging
import sys
from typing import Any

from scheduling import events
from scheduling.config import SECRETS, VARIABLES, Configuration
from scheduling.failure_throttle import LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, MemoryRateLimiter
from scheduling.runtimes.workers.bindings import (
    DB_BINDING,
    LAUNCH_LIMITER_BINDING,
    SCHEDULE_CLOCK_BINDING,
    BindingRateLimiter,
    UnboundDatabase,
    clock_binding,
    d1_binding,
    rate_limit_binding,
)
from scheduling.runtimes.workers.clock import WorkersClock
from scheduling.runtimes.workers.crypto import WebCrypto
from scheduling.runtimes.workers.d1 import D1Database
from scheduling.runtimes.workers.fetch_client import WorkersFetch
from scheduling.runtimes.workers.schedule_clock import DurableClocks
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
    its variables, and whether the optional rate limiting and clock bindings are there."""
    limiter = "bound" if rate_limit_binding(env) is not None else "unbound"
    clocks = "bound" if clock_binding(env) is not None else "unbound"
    variables = sorted((name, repr(value)) for name, value in read_env(env).items())
    return (
        *variables,
        (LAUNCH_LIMITER_BINDING, limiter),
        (SCHEDULE_CLOCK_BINDING, clocks),
    )


def build_services(env: Any) -> Services:
    """The ports over this env. Nothing here raises for a missing or bad setting: each is
    reported by name (500 `misconfigured`) by the requests that need it, and by the tick."""
    binding = d1_binding(env)
    clock = WorkersClock()
    # Failed launches: counted by the binding across the location's isolates when there is
    # one, else in this isolate (also the binding's stand-in should it fail).
    in_isolate = MemoryRateLimiter(LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, clock)
    limiter_binding = rate_limit_binding(env)
    clocks = clock_binding(env)
    return Services(
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
        clocks=DurableClocks(clocks) if clocks is not None else None,
    )
