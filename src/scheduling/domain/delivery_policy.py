"""A delivery's life, whatever the channel: what an endpoint's answer means (`DELIVERY_TABLE`,
looked up by status), and when to try again.

A 2xx delivers. A 410 Gone disables the endpoint (its receiver says it is no
more). A 429 is tried again at its `Retry-After` (seconds or an HTTP date) when
it gives one. Any other answer, a timeout (10 s from the connection slot) or a
connection failure is tried again after about 30 s, 2 min, 10 min, 1 h, 3 h,
6 h, then every 12 h, each delay 80–100 % of that (jitter, so endpoints that
failed together are not tried again together), with a last try 72 h after the
event (or after a person sent it again); after that it has failed, as Standard
Webhooks and Svix retry for days. An endpoint that has accepted nothing for 5
days is disabled. Every retry carries the same `webhook-id` and body; only the
timestamp and the signature are new.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

from scheduling.domain.retry_after import parse_retry_after
from scheduling.limits import REQUEST_TIMEOUT_MS
from scheduling.ports import AddressRefused, OutboundResponse, TransportError, TransportTimeout

HOUR_MS = 3_600_000
# Then the last delay again, until the horizon.
RETRY_DELAYS_MS = (30_000, 120_000, 600_000, HOUR_MS, 3 * HOUR_MS, 6 * HOUR_MS, 12 * HOUR_MS)
JITTER = (0.8, 1.0)
GIVE_UP_AFTER_MS = 72 * HOUR_MS
# An endpoint that has accepted nothing for this long is disabled (with what it had waiting).
DISABLE_AFTER_FAILING_MS = 5 * 24 * HOUR_MS
TIMEOUT_MS = REQUEST_TIMEOUT_MS
# The answer's body is never used: at most this much of it is read.
MAX_ANSWER_BYTES = 64 << 10
# A paced kind's endpoint is sent at most one message in this long.
MESSAGE_INTERVAL_MS = 60_000
# An endpoint whose deliveries have failed for this long is marked on the manage page.
FAILING_MARK_AFTER_MS = 3_600_000


class DeliveryStatus(StrEnum):
    WAITING = "waiting"  # for its time (the first try, or the next)
    SENDING = "sending"  # claimed by a runner, under a lease
    DELIVERED = "delivered"  # the endpoint answered 2xx
    FAILED = "failed"  # tried for 72 h, or its endpoint is gone (410) or disabled


# Why an attempt did not deliver (`last_error`); an HTTP answer other than 2xx is its status.
TIMEOUT = "timeout"
NETWORK_ERROR = "network_error"
ADDRESS_NOT_PUBLIC = "address_not_public"
HTTP_STATUS = "http_status"
ENDPOINT_GONE = "endpoint_gone"
ENDPOINT_DISABLED = "endpoint_disabled"  # it accepted nothing for DISABLE_AFTER_FAILING_MS
SECRET_UNREADABLE = "secret_unreadable"


@dataclass(frozen=True)
class AttemptResult:
    """What one delivery attempt got back."""

    http_status: int | None  # None: no answer
    error: str | None  # None: delivered
    retry_after_ms: int | None = None  # a 429's usable Retry-After

    @property
    def delivered(self) -> bool:
        return self.error is None

    @property
    def gone(self) -> bool:
        return self.error == ENDPOINT_GONE


@dataclass(frozen=True)
class DeliveryRule:
    """One row of the delivery table: the HTTP statuses it covers and what they mean."""

    answer: str
    statuses: range | tuple[int, ...]
    error: str | None  # None: delivered
    waits_for_retry_after: bool = False


# Looked up by status, first row first; a status no row names is an error worth retrying.
DELIVERY_TABLE: tuple[DeliveryRule, ...] = (
    DeliveryRule("2xx", range(200, 300), None),
    DeliveryRule("410", (410,), ENDPOINT_GONE),
    DeliveryRule("429", (429,), HTTP_STATUS, waits_for_retry_after=True),
)
OTHER_ANSWER = DeliveryRule("other", (), HTTP_STATUS)


def classify(answer: OutboundResponse | TransportError, *, now_ms: int = 0) -> AttemptResult:
    if isinstance(answer, TransportTimeout):
        return AttemptResult(None, TIMEOUT)
    if isinstance(answer, AddressRefused):
        return AttemptResult(None, ADDRESS_NOT_PUBLIC)
    if isinstance(answer, TransportError):
        return AttemptResult(None, NETWORK_ERROR)
    rule = next((r for r in DELIVERY_TABLE if answer.status in r.statuses), OTHER_ANSWER)
    wait = None
    if rule.waits_for_retry_after:
        wait = parse_retry_after(answer.headers.get("retry-after"), now_ms=now_ms)
    return AttemptResult(answer.status, rule.error, wait)


@dataclass(frozen=True)
class DeliverySettlement:
    """Where a delivery stands after an attempt: its status and next attempt."""

    status: DeliveryStatus
    next_attempt_at: int | None = None
    finished_at: int | None = None


def backoff_ms(attempt: int, rng: random.Random) -> int:
    """The wait after attempt number `attempt` failed: its step of `RETRY_DELAYS_MS` (the
    last one again past the end), 80–100 % of it."""
    base = RETRY_DELAYS_MS[min(max(attempt, 1), len(RETRY_DELAYS_MS)) - 1]
    return int(base * rng.uniform(*JITTER))


def after_attempt(
    result: AttemptResult, *, attempt: int, tried_from: int, now: int, rng: random.Random
) -> DeliverySettlement:
    """Where a delivery goes after attempt number `attempt` ended at `now` with `result`;
    `tried_from` is its event's instant, or when a person last sent it again."""
    if result.delivered or result.gone:
        status = DeliveryStatus.DELIVERED if result.delivered else DeliveryStatus.FAILED
        return DeliverySettlement(status, finished_at=now)
    last_try = tried_from + GIVE_UP_AFTER_MS
    if now >= last_try:
        return DeliverySettlement(DeliveryStatus.FAILED, finished_at=now)
    delay = backoff_ms(attempt, rng)
    if result.retry_after_ms is not None:
        delay = result.retry_after_ms  # the endpoint said when: no sooner, and no later
    return DeliverySettlement(DeliveryStatus.WAITING, next_attempt_at=min(now + delay, last_try))
