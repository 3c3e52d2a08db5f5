"""What the plugin tells a notification endpoint, and what the endpoint's answer means.

An event's body is Standard Webhooks' `{"type", "timestamp", "data"}`: which schedule, what it
was to do and when, how it ended in the card's own words, and where to see it; never a
secret, a token or a title. `DELIVERY_TABLE` says what an answer means: a 2xx delivers, a 410
disables the endpoint, anything else is tried again, with jitter, until 72 h after the event;
an endpoint that accepted nothing for 5 days is disabled.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Self

from scheduling.domain.outcomes import Status, parse_retry_after
from scheduling.domain.protocol import instant_ms as _ms
from scheduling.domain.times import rfc3339
from scheduling.limits import REQUEST_TIMEOUT_MS
from scheduling.ports import AddressRefused, OutboundResponse, TransportError, TransportTimeout

# -- events ----------------------------------------------------------------------------------------

REFUSED = "schedule.refused"
COMPLETED = "schedule.completed"
RETRYING = "schedule.retrying"
PROPOSAL_CREATED = "proposal.created"  # an agent proposes; a person is to decide
# A waiting schedule the other kind's completion put out of date: it would be
# refused at its time. Not a choice of its own: the endpoints that hear of refusals hear of it.
STALE = "schedule.stale"
# A release's line stopped at an item not done (the rest held), or every item was applied.
RELEASE_HELD = "release.held"
RELEASE_COMPLETED = "release.completed"
# The events an endpoint may subscribe to, in the order the form offers them.
EVENT_TYPES = (REFUSED, COMPLETED, RETRYING, PROPOSAL_CREATED, RELEASE_HELD, RELEASE_COMPLETED)
DEFAULT_EVENTS = (REFUSED,)
TEST_EVENT = "test"
MAX_ENDPOINTS = 5
# The kinds of endpoint are registered in `channels/kinds.py`, one entry each.
# How far back "Replay failures since …" may reach, in hours (its choices, in order).
REPLAY_SINCE_HOURS = (1, 6, 24, 72, 168)


def event_type(status: Status) -> str | None:
    """The event a settle to `status` raises: refused, completed and retrying do."""
    name = f"schedule.{status.value}"
    return name if name in EVENT_TYPES else None


def page_url(public_origin: str, installation_id: str) -> str:
    """The installation's page, opened from Dee Wan (a launch starts the session)."""
    return f"{public_origin}/installations/{installation_id}"


# A body's keys where they differ from the field's name, and how a value is read back.
_KEYS = {"at": "timestamp", "to_state": "to", "item_id": "schedule_id", "for_person": "for"}
_READ_AS: dict[str, Callable[[Any], Any]] = {
    "at": _ms,
    "due_at": _ms,
    "next_attempt_at": _ms,
    "status": Status,
    "applied": tuple,
    "held": tuple,
}


class _Told:
    """An event as an endpoint is told it: `read` gives back the event whose `body` wrote it."""

    @classmethod
    def read(cls, body: bytes) -> Self:
        event = json.loads(body)
        said = {**event["data"], "type": event["type"], "timestamp": event["timestamp"]}
        values = {}
        for name in (f.name for f in fields(cls)):  # type: ignore[arg-type]
            value = said[_KEYS.get(name, name)]
            values[name] = value if value is None or name not in _READ_AS else _READ_AS[name](value)
        return cls(**values)


@dataclass(frozen=True)
class ScheduleEvent(_Told):
    """One settle of one schedule, as its webhook tells it (`body`), and as a chat reads it
    back from the outbox (`read`)."""

    type: str
    at: int  # the settle's instant
    installation_id: str
    schedule_id: str
    content_id: str
    kind: str
    to_state: str
    version_id: str
    due_at: int
    local_time: str
    timezone: str
    status: Status
    result_code: str | None
    attempts: int
    outcome_unknown: bool
    message: str  # the card's own sentence (`wording.explain_result`)
    next_attempt_at: int | None = None
    ended_by: str | None = None  # which cap ended a `retry_exhausted` one (`EndedBy`)

    def body(self, public_origin: str) -> bytes:
        data: dict[str, Any] = {
            "installation_id": self.installation_id,
            "schedule_id": self.schedule_id,
            "content_id": self.content_id,
            "kind": self.kind,
            "to": self.to_state,
            "version_id": self.version_id,
            "due_at": rfc3339(self.due_at),
            "local_time": self.local_time,
            "timezone": self.timezone,
            "status": self.status.value,
            "result_code": self.result_code,
            "ended_by": self.ended_by,
            "message": self.message,
            "attempts": self.attempts,
            "outcome_unknown": self.outcome_unknown,
            "next_attempt_at": None
            if self.next_attempt_at is None
            else rfc3339(self.next_attempt_at),
            "page_url": page_url(public_origin, self.installation_id),
        }
        return _json({"type": self.type, "timestamp": rfc3339(self.at), "data": data})


def body_of_test_event(
    public_origin: str, installation_id: str, endpoint_id: str, at: int
) -> bytes:
    """The body of a "Send test event": signed and sent like any event, about no schedule."""
    data = {
        "installation_id": installation_id,
        "endpoint_id": endpoint_id,
        "message": "A test event from Scheduling: this endpoint receives its notifications.",
        "page_url": page_url(public_origin, installation_id),
    }
    return _json({"type": TEST_EVENT, "timestamp": rfc3339(at), "data": data})


@dataclass(frozen=True)
class ReleaseEvent(_Told):
    """A release held or completed, as an endpoint hears of it (`body`; `read` again): its name
    (which a person gave it, and may be told), never an item's title."""

    type: str
    at: int
    installation_id: str
    release_id: str
    name: str
    due_at: int
    timezone: str
    item_id: str  # the item whose end held or completed it
    result_code: str | None
    applied: tuple[str, ...]
    held: tuple[str, ...]
    message: str

    def body(self, public_origin: str) -> bytes:
        data = {
            "installation_id": self.installation_id,
            "release_id": self.release_id,
            "name": self.name,
            "due_at": rfc3339(self.due_at),
            "timezone": self.timezone,
            "status": "held" if self.type == RELEASE_HELD else "completed",
            "schedule_id": self.item_id,
            "result_code": self.result_code,
            "applied": list(self.applied),
            "held": list(self.held),
            "message": self.message,
            "page_url": page_url(public_origin, self.installation_id),
        }
        return _json({"type": self.type, "timestamp": rfc3339(self.at), "data": data})


@dataclass(frozen=True)
class ProposalEvent(_Told):
    """An agent's proposal, as an endpoint hears of it (`body`; `read` again): never its note
    (the person reads it on their page), never a key."""

    at: int
    installation_id: str
    proposal_id: str
    content_id: str
    kind: str
    to_state: str | None
    due_at: int
    local_time: str
    timezone: str
    proposed_by: str  # the agent key's name
    for_person: str  # whom the key acts for

    def body(self, public_origin: str) -> bytes:
        data = {
            "installation_id": self.installation_id,
            "proposal_id": self.proposal_id,
            "content_id": self.content_id,
            "kind": self.kind,
            "to": self.to_state,
            "due_at": rfc3339(self.due_at),
            "local_time": self.local_time,
            "timezone": self.timezone,
            "proposed_by": self.proposed_by,
            "for": self.for_person,
            "message": f"{self.proposed_by} proposes this; a person confirms or declines it on"
            " the content's Scheduling page.",
            "page_url": page_url(public_origin, self.installation_id),
        }
        return _json({"type": PROPOSAL_CREATED, "timestamp": rfc3339(self.at), "data": data})


# What an outbox body may tell.
Notification = ScheduleEvent | ProposalEvent | ReleaseEvent


def read_event(body: bytes) -> Notification:
    """The event an outbox body tells, read back as the event that wrote it."""
    kind = json.loads(body)["type"]
    if kind == PROPOSAL_CREATED:
        return ProposalEvent.read(body)
    if kind in (RELEASE_HELD, RELEASE_COMPLETED):
        return ReleaseEvent.read(body)
    return ScheduleEvent.read(body)


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# -- a delivery's life -----------------------------------------------------------------------------

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
