"""Calls that cost someone else, made only within their limits (`domain/call_limits.py`):
beyond them a 429 with `Retry-After`, and the call is not made.

A test event to an endpoint costs the endpoint a request and the operator a subrequest, and
on the local runtime it holds a connection of the visitors' pool for up to 10 s: at most one
is under way per endpoint, and five a minute (`ENDPOINT_CALLS`, the limit any call a person
makes to an endpoint takes, such as a replay). A create reads Dee Wan: at most
`MAX_CREATES_PER_MINUTE` a person.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from scheduling.domain import delivery_policy
from scheduling.domain.call_limits import CallLimit
from scheduling.domain.refusals import Refusal
from scheduling.repository import throttles
from scheduling.services import Services, log

# Under way until it answers, or for its timeout and a margin should the runtime die mid-call.
ENDPOINT_CALLS = CallLimit(per_minute=5, at_once=1, hold_ms=delivery_policy.TIMEOUT_MS + 5_000)


def endpoint_key(endpoint_id: str) -> str:
    return f"endpoint:{endpoint_id}"


def creates_key(installation_id: str, person_id: str) -> str:
    return f"creates:{installation_id}:{person_id}"


@asynccontextmanager
async def limited(
    services: Services, key: str, limit: CallLimit, refusal: Callable[[int], Refusal]
) -> AsyncIterator[None]:
    """Within the block the call of `key` holds its place; `refusal(wait_ms)` is raised when
    there is none."""
    taken = await throttles.take(
        services.db, key, limit, services.crypto.random_token(), services.clock.now_ms()
    )
    if not isinstance(taken, throttles.Taken):
        raise refusal(taken)
    try:
        yield
    finally:
        if limit.at_once is not None:
            try:
                await throttles.release(services.db, taken, services.clock.now_ms())
            except Exception as exc:  # the place frees itself after `hold_ms`
                log.warning("a call's place was not given back: %s", type(exc).__name__)
