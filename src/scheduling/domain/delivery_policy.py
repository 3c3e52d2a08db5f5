"""A delivery's life, whatever the channel: what an endpoint's answer means (`DELIVERY_TABLE`,
looked up by status), and when to try again.

A 2xx delivers. A 410 Gone disables the endpoint (its receiver says it is no
more). A 429 is tried again at its `Retry-After` (seconds or an HTTP date) when
it gives one. Any other answer, a timeout (10 s from the connection slot) or a
connection failure is tried again after about 30 s, 2 min, 10 min, 1 h, then
every 6 h, with a last try 24 h after the event; after that it has failed.
Every retry carries the same `webhook-id` and body; only the timestamp and
the signature are new.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from scheduling.domain.retry_after import parse_retry_after
from scheduling.limits import REQUEST_TIMEOUT_MS
from scheduling.ports import OutboundResponse, TransportError, TransportTimeout

RETRY_DELAYS_MS = (30_000, 120_000, 600_000, 3_600_000, 21_600_000)
GIVE_UP_AFTER_MS = 24 * 3_600_000
TIMEOUT_MS = REQUEST_TIMEOUT_MS
# The answer's body is never used: at most this much of it is read.
MAX_ANSWER_BYTES = 64 << 10
# A chat endpoint is sent at most one message in this long.
MESSAGE_INTERVAL_MS = 60_000
# An endpoint whose deliveries have failed for this long is marked on the manage page.
FAILING_MARK_AFTER_MS = 3_600_000


class DeliveryStatus(StrEnum):
    WAITING = "waiting"  # for its time (the first try, or the next)
    SENDING = "sending"  # claimed by a runner, under a lease
    DELIVERED = "delivered"  # the endpoint answered 2xx
    FAILED = "failed"  # tried for 24 h, or the endpoint is gone (410) or its secret unreadable


# Why an attempt did not deliver (`last_error`); an HTTP answer other than 2xx is its status.
TIMEOUT = "timeout"
NETWORK_ERROR = "network_error"
HTTP_STATUS = "http_status"
ENDPOINT_GONE = "endpoint_gone"
SECRET_UNREADABLE = "secret_unreadable"


@dataclass(frozen=True)
class AttemptResult:
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
    if isinstance(answer, TransportError):
        return AttemptResult(None, NETWORK_ERROR)
    rule = next((r for r in DELIVERY_TABLE if answer.status in r.statuses), OTHER_ANSWER)
    wait = None
    if rule.waits_for_retry_after:
        wait = parse_retry_after(answer.headers.get("retry-after"), now_ms=now_ms)
    return AttemptResult(answer.status, rule.error, wait)


@dataclass(frozen=True)
class DeliverySettlement:
    status: DeliveryStatus
    next_attempt_at: int | None = None
    finished_at: int | None = None


def after_attempt(
    result: AttemptResult, *, attempt: int, created_at: int, now: int
) -> DeliverySettlement:
    """Where a delivery goes after attempt number `attempt` ended at `now` with `result`."""
    if result.delivered or result.gone:
        status = DeliveryStatus.DELIVERED if result.delivered else DeliveryStatus.FAILED
        return DeliverySettlement(status, finished_at=now)
    last_try = created_at + GIVE_UP_AFTER_MS
    if now >= last_try:
        return DeliverySettlement(DeliveryStatus.FAILED, finished_at=now)
    delay = RETRY_DELAYS_MS[min(max(attempt, 1), len(RETRY_DELAYS_MS)) - 1]
    if result.retry_after_ms is not None:
        delay = result.retry_after_ms  # the endpoint said when: no sooner, and no later
    return DeliverySettlement(DeliveryStatus.WAITING, next_attempt_at=min(now + delay, last_try))
