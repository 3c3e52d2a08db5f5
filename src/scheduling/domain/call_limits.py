"""How often someone may make a call that costs someone else, and how many at once.

A test event to an endpoint (and, later, a replay of its deliveries) is a request to the
endpoint and a subrequest of the operator's; a create reads Dee Wan. Each is counted by a
key (an endpoint, a person of an installation) over a minute, and may be limited to a few
under way at once: the rule is here, the counting in D1 (`repository/throttles.py`), so it
holds across isolates and processes alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WINDOW_MS = 60_000


@dataclass(frozen=True)
class CallLimit:
    """How many calls a minute, and at once, a caller may make."""

    per_minute: int
    at_once: int | None = None  # calls under way at once; None: no limit
    # How long a call counts as under way unless it ends sooner (it outlives a runtime that
    # died mid-call by no more than this).
    hold_ms: int = 0


@dataclass(frozen=True)
class Call:
    """One call counted against a limit: when it started, until when it counts as busy."""

    started_at: int
    busy_until: int


def wait_ms(limit: CallLimit, calls: Iterable[Call], now: int) -> int:
    """0 when a new call may start at `now`, else how long until one may: until enough
    calls have left the minute, and enough of those under way have ended."""
    calls = list(calls)
    waits = [0]
    recent = sorted(call.started_at for call in calls if call.started_at > now - WINDOW_MS)
    if len(recent) >= limit.per_minute:
        waits.append(recent[len(recent) - limit.per_minute] + WINDOW_MS - now)
    if limit.at_once is not None:
        busy = sorted(call.busy_until for call in calls if call.busy_until > now)
        if len(busy) >= limit.at_once:
            waits.append(busy[len(busy) - limit.at_once] - now)
    return max(waits)


def seconds(ms: int) -> int:
    """A wait as `Retry-After` says it: whole seconds, rounded up, at least one."""
    return max(1, -(-ms // 1000))
