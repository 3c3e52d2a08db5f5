"""How many failed attempts one client may make: launch exchanges (each made-up launch code
costs a call to Dee Wan with the installation's token) and operator sign-ins.

Only failures count (a success, or a refusal before any call, never does), per client and
installation for a launch, per client for a sign-in; a client past the limit is answered 429
without a call, or without its secret compared, until its window has passed. The client is
what the runtime reports (an IPv6 address as its /64). The counting is the `RateLimiter` port
(Workers' binding, else `MemoryRateLimiter`), which cannot be asked without counting, so the
core remembers whom it held back.

A failure is known only once Dee Wan answers, so at most `MAX_IN_FLIGHT` exchanges of one key
run at once and a further one is refused at once (not queued: in workerd a request waiting on
another request's work can be left hanging when that one ends).
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager

from scheduling.ports import Clock, RateLimiter

# Failed exchanges a client may make in a window per installation; the next one finds it
# over the limit and it is then held back for a window (so at most this + 1 calls reach
# Dee Wan in a row, this + MAX_IN_FLIGHT sent at once). Workers' binding counts with its
# own `simple.limit` (wrangler.example.jsonc).
LAUNCH_FAILURES_PER_MINUTE = 10
WINDOW_MS = 60_000
# Exchanges of one client with one installation that may be in flight at once.
MAX_IN_FLIGHT = 2
# Keys remembered at most, so a flood of addresses cannot grow memory without bound.
MAX_KEYS = 10_000
UNKNOWN_CLIENT = "unknown"


def client_key(client: str | None) -> str:
    """The client as counted: an IPv4 address as it is, an IPv6 address as its /64."""
    if not client:
        return UNKNOWN_CLIENT
    try:
        address = ipaddress.ip_address(client.strip().split("%", 1)[0])
    except ValueError:
        return client.strip()[:64] or UNKNOWN_CLIENT
    if isinstance(address, ipaddress.IPv4Address):
        return str(address)
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def launch_key(installation_id: str, client: str | None) -> str:
    return f"launch:{installation_id}:{client_key(client)}"


def sign_in_key(client: str | None) -> str:
    """An operator sign-in's key: the client alone (there is one operator secret)."""
    return f"operator:{client_key(client)}"


class MemoryRateLimiter:
    """The `RateLimiter` port in memory: at most `limit` events per key in any `period_ms`,
    like the binding's `limit()` (every call within the limit counts, the first past it
    answers False). Its counts live as long as the process, or the Worker's isolate."""

    def __init__(self, limit: int, period_ms: int, clock: Clock) -> None:
        self._limit = limit
        self._period_ms = period_ms
        self._clock = clock
        self._events: OrderedDict[str, deque[int]] = OrderedDict()

    async def limit(self, key: str) -> bool:
        now = self._clock.now_ms()
        events = self._events.pop(key, None) or deque()
        while events and events[0] <= now - self._period_ms:
            events.popleft()
        self._events[key] = events  # the most recently used key is last
        while len(self._events) > MAX_KEYS:
            self._events.popitem(last=False)
        if len(events) >= self._limit:
            return False
        events.append(now)
        return True


class Crowded(Exception):
    """`MAX_IN_FLIGHT` of this key's attempts are under way."""


class FailureThrottle:
    """Decides whether a client may try (a launch, a sign-in), and counts the tries that
    failed; each is known by its key (`launch_key`, `sign_in_key`)."""

    def __init__(self, limiter: RateLimiter, clock: Clock) -> None:
        self._limiter = limiter
        self._clock = clock
        self._held_until: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}  # a key is here only while it has one

    @contextmanager
    def exchanging(self, key: str) -> Iterator[None]:
        """One attempt of this key under way; `Crowded` when `MAX_IN_FLIGHT` of them already are."""
        running = self._in_flight.get(key, 0)
        if running >= MAX_IN_FLIGHT:
            raise Crowded
        self._in_flight[key] = running + 1
        try:
            yield
        finally:
            self._in_flight[key] -= 1
            if not self._in_flight[key]:
                del self._in_flight[key]

    def retry_after_s(self, key: str) -> int | None:
        """Seconds until this key may try again, or None when it may try now."""
        until = self._held_until.get(key)
        if until is None:
            return None
        left_ms = until - self._clock.now_ms()
        if left_ms <= 0:
            del self._held_until[key]
            return None
        return -(-left_ms // 1000)

    async def failed(self, key: str) -> bool:
        """Count one failed attempt; True when it put the key over its limit (and it was not
        held back already)."""
        if await self._limiter.limit(key):
            return False
        if self.retry_after_s(key) is not None:
            return False
        self._hold(key)
        return True

    def _hold(self, key: str) -> None:
        now = self._clock.now_ms()
        if len(self._held_until) >= MAX_KEYS:
            for stale in [k for k, until in self._held_until.items() if until <= now]:
                del self._held_until[stale]
            while len(self._held_until) >= MAX_KEYS:
                del self._held_until[next(iter(self._held_until))]
        self._held_until.pop(key, None)
        self._held_until[key] = now + WINDOW_MS
