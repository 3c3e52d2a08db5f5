"""A webhook delivery's life: what an endpoint's answer means, and when to try again.

A 2xx delivers. A 410 Gone disables the endpoint (its receiver says it is no
more). Any other answer, a timeout (10 s from the connection slot) or a
connection failure is tried again after about 30 s, 2 min, 10 min, 1 h, then
every 6 h, with a last try 24 h after the event; after that it has failed.
Every retry carries the same `webhook-id` and body; only the timestamp and
the signature are new.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from scheduling.limits import REQUEST_TIMEOUT_MS
from scheduling.ports import AddressRefused, OutboundResponse, TransportError, TransportTimeout

RETRY_DELAYS_MS = (30_000, 120_000, 600_000, 3_600_000, 21_600_000)
GIVE_UP_AFTER_MS = 24 * 3_600_000
TIMEOUT_MS = REQUEST_TIMEOUT_MS
# The answer's body is never used: at most this much of it is read.
MAX_ANSWER_BYTES = 64 << 10
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
ADDRESS_NOT_PUBLIC = "address_not_public"
HTTP_STATUS = "http_status"
ENDPOINT_GONE = "endpoint_gone"
SECRET_UNREADABLE = "secret_unreadable"


@dataclass(frozen=True)
class AttemptResult:
    http_status: int | None  # None: no answer
    error: str | None  # None: delivered

    @property
    def delivered(self) -> bool:
        return self.error is None

    @property
    def gone(self) -> bool:
        return self.error == ENDPOINT_GONE


def classify(answer: OutboundResponse | TransportError) -> AttemptResult:
    if isinstance(answer, TransportTimeout):
        return AttemptResult(None, TIMEOUT)
    if isinstance(answer, AddressRefused):
        return AttemptResult(None, ADDRESS_NOT_PUBLIC)
    if isinstance(answer, TransportError):
        return AttemptResult(None, NETWORK_ERROR)
    if 200 <= answer.status <= 299:
        return AttemptResult(answer.status, None)
    if answer.status == 410:
        return AttemptResult(answer.status, ENDPOINT_GONE)
    return AttemptResult(answer.status, HTTP_STATUS)


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
    return DeliverySettlement(DeliveryStatus.WAITING, next_attempt_at=min(now + delay, last_try))
