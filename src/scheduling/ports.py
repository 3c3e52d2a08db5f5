"""The ports through which the core talks to the world, and what every layer shares.

Each runtime (CPython, Workers) supplies one implementation of each port: a D1-shaped
database, crypto, outbound HTTP, a clock, a rate limiter and the installations' alarm clocks.
The core imports nothing else that does I/O. Beside them, calls admitted to at most
`SEND_CONCURRENCY` connection slots (`gather_limited`: a request's timeout never runs while it
waits for one), and the JSON log lines (`emit`: counts, ids and instants, never a secret).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

Row = dict[str, Any]


# -- database (D1-shaped) ---------------------------------------------------


@dataclass(frozen=True)
class Meta:
    """What a statement changed."""

    changes: int = 0
    last_row_id: int | None = None


@dataclass(frozen=True)
class Result:
    """The rows a statement returned, and what it changed."""

    results: list[Row] = field(default_factory=list)
    meta: Meta = field(default_factory=Meta)


class DatabaseError(Exception):
    """A statement failed. `constraint` is set when a UNIQUE/CHECK/FK rule refused it."""

    def __init__(self, message: str, *, constraint: bool = False) -> None:
        super().__init__(message)
        self.constraint = constraint


class Statement(Protocol):
    def bind(self, *values: Any) -> Statement: ...

    async def all(self) -> Result: ...

    async def first(self) -> Row | None: ...

    async def run(self) -> Result: ...


class Database(Protocol):
    """D1's shape. `batch` runs its statements in one transaction: all or none.

    Every call may raise `LimitReached` when the invocation has used up its D1 queries;
    the call then did nothing.
    """

    def prepare(self, sql: str) -> Statement: ...

    async def batch(self, statements: Sequence[Statement]) -> list[Result]: ...


# -- the platform's limits per invocation -----------------------------------


class LimitReached(Exception):
    """The invocation reached a platform limit of `kind` ("d1": D1 and other Cloudflare
    services; "subrequests": outbound `fetch`) and the call was refused unmade. Not a failure
    of the thing called: the runner leaves the rest for the next invocation's allowance."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"the invocation's {kind} limit is reached")
        self.kind = kind


# -- crypto -----------------------------------------------------------------


class UnreadableSecret(Exception):
    """A sealed value does not open under the current key (key changed, or data damaged)."""


class Crypto(Protocol):
    async def seal(self, plaintext: str, context: str) -> str:
        """AES-256-GCM with a fresh 96-bit IV; `context` is bound as associated data."""
        ...

    async def open(self, sealed: str, context: str) -> str:
        """Inverse of `seal`; raises `UnreadableSecret` when it does not open."""
        ...

    async def sha256_hex(self, value: str) -> str: ...

    async def hmac_sha256(self, key: bytes, message: bytes) -> bytes:
        """HMAC-SHA256 of `message` under `key` (webhook signatures)."""
        ...

    def random_token(self) -> str:
        """32 random bytes as 43 url-safe base64 characters."""
        ...


# -- outbound HTTP ----------------------------------------------------------


@dataclass(frozen=True)
class OutboundRequest:
    """A request to another service."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None
    timeout_s: float = 10.0
    # Read at most this much of the answer's body; a longer one comes back `truncated`.
    max_body_bytes: int = 1 << 20


@dataclass(frozen=True)
class OutboundResponse:
    """Another service's answer, its body cut at the request's limit."""

    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    truncated: bool = False  # the body was longer than the request's `max_body_bytes`


class TransportError(Exception):
    """The request failed before a response arrived (DNS, connect, reset)."""


class TransportTimeout(TransportError):
    """No complete response within the timeout."""


class AddressRefused(TransportError):
    """The name resolved to an address the plugin may not call (loopback, the local network):
    nothing was sent. Only the local runtime raises it, outside development; on Workers the
    platform cannot reach such addresses at all."""


class HttpClient(Protocol):
    async def send(self, request: OutboundRequest) -> OutboundResponse:
        """Send once; never follow redirects; stop reading the body past `max_body_bytes`.

        `timeout_s` bounds the whole exchange, body included, from this call on.
        Every failure is a `TransportError` (a `TransportTimeout` for the timeout);
        nothing else escapes, except `LimitReached` when the invocation may make no
        more subrequests (then nothing was sent).
        """
        ...


async def answer_to(
    http: HttpClient, request: OutboundRequest, what: str
) -> OutboundResponse | TransportError:
    """One send's answer, or how it failed; `what` names the call in a log line. Only
    `LimitReached` is raised (nothing was sent). Any other exception is an adapter breaking
    its contract: to this call, the request got no answer."""
    try:
        return await http.send(request)
    except TransportError as exc:
        return exc
    except LimitReached:
        raise
    except Exception as exc:
        logging.getLogger("scheduling").error(
            "%s failed unexpectedly: %s", what, type(exc).__name__
        )
        return TransportError(type(exc).__name__)


# -- alarm clocks (one per installation; Durable Objects' alarms) -------------


class ScheduleClocks(Protocol):
    """Each installation's alarm clock: one wake-up, at which its due rows are sent.

    D1 stays the only truth: a clock holds nothing but the time of its next wake-up, and a
    wake-up that finds nothing due reads D1 again and sleeps until what is next.
    """

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        """Wake the installation's clock at `wake_at` (epoch ms) or earlier: a clock set
        earlier stays as it is (it is never moved later by being told). True when it moved,
        from later or from no wake-up at all. Raises `ClockUnavailable` when the clock could
        not be reached (the cron's watchdog tells it again within a minute)."""
        ...


class ClockUnavailable(Exception):
    """An installation's clock could not be told; nothing is known to have changed."""


class AlarmStore(Protocol):
    """The one alarm of an installation's clock, as Durable Objects' storage keeps it:
    setting it replaces it; while its alarm runs it reads None unless set since."""

    async def get_alarm(self) -> int | None: ...

    async def set_alarm(self, at: int) -> None: ...


# -- clock ------------------------------------------------------------------


class Clock(Protocol):
    def now_ms(self) -> int: ...


# -- rate limiting ----------------------------------------------------------


class RateLimiter(Protocol):
    async def limit(self, key: str) -> bool:
        """Count one event for `key`; True while the key is within its limit.

        The shape of Workers' Rate Limiting binding (`limit({key})` answers `success`):
        every call within the limit counts, and a call past it answers False until the
        key's window has passed. There is no way to ask without counting.
        """
        ...


# -- connection slots ------------------------------------------------------------------------------

T = TypeVar("T")


async def gather_limited(limit: int, calls: Iterable[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run each call once a slot is free, at most `limit` at a time; results in call order."""
    slots = asyncio.Semaphore(limit)

    async def admitted(call: Callable[[], Awaitable[T]]) -> T:
        async with slots:
            return await call()

    return list(await asyncio.gather(*(admitted(call) for call in calls)))


# -- log lines -------------------------------------------------------------------------------------

events = logging.getLogger("scheduling.events")


def emit(event: str, **fields: Any) -> None:
    events.info(json.dumps({"event": event, **fields}, separators=(",", ":")))


def configure_events(stream: Any) -> None:
    """Print event lines bare (no level or logger prefix) so each line parses as JSON."""
    if events.handlers:
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    events.addHandler(handler)
    events.setLevel(logging.INFO)
    events.propagate = False
