"""Calls that cost someone else, made only within their limits (`domain/call_limits.py`):
beyond them a 429 with `Retry-After`, and the call is not made.

A test event to an endpoint (or a delivery sent again) costs the endpoint a request and the
operator a subrequest, and on the local runtime it holds a connection of the visitors' pool
for up to 10 s. Its budget is a person's of an installation, whatever endpoint it goes to
(an endpoint deleted and added again is a new id, so a budget by endpoint renewed itself):
one under way at a time and five a minute (`ENDPOINT_CALLS`); and an installation holds at
most `VISITOR_CALLS_PER_INSTALLATION` of the visitors' pool at once, so one installation's
endpoints that never answer cannot keep another's visitors waiting. A create reads Dee Wan:
at most `MAX_CREATES_PER_MINUTE` a person.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from scheduling.domain import delivery_policy
from scheduling.domain.call_limits import CallLimit
from scheduling.domain.refusals import Refusal
from scheduling.limits import VISITOR_CALLS_PER_INSTALLATION
from scheduling.repository import throttles
from scheduling.services import Services, log

# Under way until it answers, or for its timeout and a margin should the runtime die mid-call.
_HOLD_MS = delivery_policy.TIMEOUT_MS + 5_000
ENDPOINT_CALLS = CallLimit(per_minute=5, at_once=1, hold_ms=_HOLD_MS)
# What the persons of one installation may hold of the visitors' pool together.
INSTALLATION_CALLS = CallLimit(
    per_minute=4 * ENDPOINT_CALLS.per_minute,
    at_once=VISITOR_CALLS_PER_INSTALLATION,
    hold_ms=_HOLD_MS,
)

Limits = Sequence[tuple[str, CallLimit]]


def endpoint_calls(installation_id: str, person_id: str) -> Limits:
    """The limits a call a person makes to an endpoint is counted against."""
    return (
        (f"endpoint_calls:{installation_id}:{person_id}", ENDPOINT_CALLS),
        (f"visitor_calls:{installation_id}", INSTALLATION_CALLS),
    )


def creates_key(installation_id: str, person_id: str) -> str:
    return f"creates:{installation_id}:{person_id}"


@asynccontextmanager
async def limited(
    services: Services, limits: Limits, refusal: Callable[[int], Refusal]
) -> AsyncIterator[None]:
    """Within the block the call holds its place under each of `limits` (key, limit);
    `refusal(wait_ms)` is raised when one has none, and the places taken for it are given
    back uncounted."""
    taken: list[tuple[throttles.Taken, CallLimit]] = []
    for key, limit in limits:
        place = await throttles.take(
            services.db, key, limit, services.crypto.random_token(), services.clock.now_ms()
        )
        if not isinstance(place, throttles.Taken):
            for given, _ in taken:
                await throttles.give_back(services.db, given)
            raise refusal(place)
        taken.append((place, limit))
    try:
        yield
    finally:
        for place, limit in taken:
            if limit.at_once is None:
                continue
            try:
                await throttles.release(services.db, place, services.clock.now_ms())
            except Exception as exc:  # the place frees itself after `hold_ms`
                log.warning("a call's place was not given back: %s", type(exc).__name__)
