"""How many failed attempts one client may make: launch exchanges and operator
sign-ins.

Anyone can send `GET /installations/:id?dee_wan_launch=dwl_…` with a made-up
code, and each such request makes the plugin call Dee Wan with the
installation's token. So exchanges that start no session are counted per
client and installation; a client past the limit is answered 429 without a
call until its window has passed. Exchanges that succeed never count, and
requests refused before any call (a malformed code, an unknown installation)
do not either: a person retrying a real link gets in. Wrong operator secrets
(`/admin` and the bearer routes) are counted per client the same way, so a
guesser is held back after a few and the right secret is then not compared
either until the window has passed.

A launch's key is the installation with the client: Dee Wan sees the calls of
one installation's token, so that is what a guesser must not flood, and a
client held back on one site can still open another. The client is what the
runtime's adapter reports (the peer address locally, `CF-Connecting-IP` on
Workers); an IPv6 address counts as its /64, which one host usually has to
itself.

The counting is a port (`RateLimiter`): Workers' Rate Limiting binding
where one is configured, else `MemoryRateLimiter` (per process, or per
isolate). The port cannot be asked without counting, so the core remembers
which clients it found over the limit, and holds them back for a window
without asking again.

A launch's failure is known only once Dee Wan has answered, so a client sending its
guesses all at once would have them all in flight before the first is
counted. So at most `MAX_IN_FLIGHT` exchanges of one client with one
installation run at once (a person's second click still goes through); a
further one is refused at once. A burst then reaches Dee Wan at most
`LAUNCH_FAILURES_PER_MINUTE + MAX_IN_FLIGHT` times, however it is sent.
Refusing rather than making it wait is deliberate: a request that waits for a turn
would be woken by another request's work, and in workerd a request waiting on
what another request started can be left hanging when that one ends.
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

    def __init__(
        self, limit: int, period_ms: int, clock: Clock, *, max_keys: int = MAX_KEYS
    ) -> None:
        self._limit = limit
        self._period_ms = period_ms
        self._clock = clock
        self._max_keys = max_keys
        self._events: OrderedDict[str, deque[int]] = OrderedDict()

    async def limit(self, key: str) -> bool:
        now = self._clock.now_ms()
        events = self._events.pop(key, None) or deque()
        while events and events[0] <= now - self._period_ms:
            events.popleft()
        self._events[key] = events  # the most recently used key is last
        while len(self._events) > self._max_keys:
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

    def __init__(
        self,
        limiter: RateLimiter,
        clock: Clock,
        *,
        window_ms: int = WINDOW_MS,
        max_keys: int = MAX_KEYS,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self._limiter = limiter
        self._clock = clock
        self._window_ms = window_ms
        self._max_keys = max_keys
        self._max_in_flight = max_in_flight
        self._held_until: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}  # a key is here only while it has one

    @contextmanager
    def exchanging(self, key: str) -> Iterator[None]:
        """One attempt of this key under way; `Crowded` when `max_in_flight` of them already
        are."""
        running = self._in_flight.get(key, 0)
        if running >= self._max_in_flight:
            raise Crowded
        self._in_flight[key] = running + 1
        try:
            yield
        finally:
            if self._in_flight[key] == 1:
                del self._in_flight[key]
            else:
                self._in_flight[key] -= 1

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
        if len(self._held_until) >= self._max_keys:
            for stale in [k for k, until in self._held_until.items() if until <= now]:
                del self._held_until[stale]
            while len(self._held_until) >= self._max_keys:
                del self._held_until[next(iter(self._held_until))]
        self._held_until.pop(key, None)
        self._held_until[key] = now + self._window_ms
