"""Classify Dee Wan's answer to a transition command: the README's Runner table as code."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

from .ports import OutboundResponse, TransportError, TransportTimeout


class OutcomeKind(enum.Enum):
    COMPLETED = "completed"
    REFUSED = "refused"
    RETRY = "retry"


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    code: str  # what the attempt row records
    http_status: int | None = None
    retry_after_ms: int | None = None  # only for 429 with a usable Retry-After


# Each code core may send, with the one status it belongs to.
SUCCESS_CODES = {"transition_applied": 200, "idempotent_replay": 200}
REFUSAL_CODES = {
    "invalid_request": 400,
    "plugin_unauthorized": 401,
    "capability_refused": 403,
    "requester_unauthorized": 403,
    "content_not_found": 404,
    "scheduled_target_stale": 409,
    "workflow_conflict": 409,
    "dependent_content": 409,
    "idempotency_key_reused": 409,
    "transition_unavailable": 422,
    "transition_refused": 422,
}
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
UNTRUSTED = "untrusted_response"


def classify(answer: OutboundResponse | TransportError, *, now_ms: int) -> Outcome:
    if isinstance(answer, TransportTimeout):
        return Outcome(OutcomeKind.RETRY, "timeout")
    if isinstance(answer, TransportError):
        return Outcome(OutcomeKind.RETRY, "network_error")

    status = answer.status
    code = _code_of(answer.body)
    if status == 429:
        retry_after = parse_retry_after(answer.headers.get("retry-after"), now_ms=now_ms)
        return Outcome(OutcomeKind.RETRY, code or "rate_limited", status, retry_after)
    if status in TRANSIENT_STATUSES:
        return Outcome(OutcomeKind.RETRY, code or "server_error", status)
    if code is not None and SUCCESS_CODES.get(code) == status:
        return Outcome(OutcomeKind.COMPLETED, code, status)
    if code is not None and REFUSAL_CODES.get(code) == status:
        return Outcome(OutcomeKind.REFUSED, code, status)
    # 3xx, other statuses, bad JSON, no code, or a code that is not its status's.
    return Outcome(OutcomeKind.REFUSED, UNTRUSTED, status)


def _code_of(body: bytes) -> str | None:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) and code else None


def parse_retry_after(value: str | None, *, now_ms: int) -> int | None:
    """Milliseconds to wait: delta-seconds or an HTTP date; None when absent or unusable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value) * 1000
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, int(when.timestamp() * 1000) - now_ms)
