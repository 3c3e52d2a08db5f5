"""What the plugin tells a notification endpoint: the events, and each event's JSON body.

A body is Standard Webhooks' `{"type", "timestamp", "data"}`. `data` says
which schedule, what it was to do and when, how it ended (the card's own
sentence, from `wording`), and where to see it. It never carries a secret, a
token, a delegation or a content title.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scheduling.domain.localtime import rfc3339
from scheduling.domain.statuses import Status
from scheduling.domain.wire import instant_ms as _ms

REFUSED = "schedule.refused"
COMPLETED = "schedule.completed"
RETRYING = "schedule.retrying"
PROPOSAL_CREATED = "proposal.created"  # an agent proposes; a person is to decide (issue 39)
# A waiting schedule the other kind's completion put out of date (issue 38): it would be
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


@dataclass(frozen=True)
class ScheduleEvent:
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

    @classmethod
    def read(cls, body: bytes) -> ScheduleEvent:
        """The event a body tells (what `body` wrote)."""
        event = json.loads(body)
        data = event["data"]
        return cls(
            type=event["type"],
            at=_ms(event["timestamp"]),
            installation_id=data["installation_id"],
            schedule_id=data["schedule_id"],
            content_id=data["content_id"],
            kind=data["kind"],
            to_state=data["to"],
            version_id=data["version_id"],
            due_at=_ms(data["due_at"]),
            local_time=data["local_time"],
            timezone=data["timezone"],
            status=Status(data["status"]),
            result_code=data["result_code"],
            attempts=data["attempts"],
            outcome_unknown=data["outcome_unknown"],
            message=data["message"],
            next_attempt_at=None
            if data["next_attempt_at"] is None
            else _ms(data["next_attempt_at"]),
            ended_by=data["ended_by"],
        )

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
class ReleaseEvent:
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

    @classmethod
    def read(cls, body: bytes) -> ReleaseEvent:
        event = json.loads(body)
        data = event["data"]
        return cls(
            type=event["type"],
            at=_ms(event["timestamp"]),
            installation_id=data["installation_id"],
            release_id=data["release_id"],
            name=data["name"],
            due_at=_ms(data["due_at"]),
            timezone=data["timezone"],
            item_id=data["schedule_id"],
            result_code=data["result_code"],
            applied=tuple(data["applied"]),
            held=tuple(data["held"]),
            message=data["message"],
        )

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
class ProposalEvent:
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

    @classmethod
    def read(cls, body: bytes) -> ProposalEvent:
        event = json.loads(body)
        data = event["data"]
        return cls(
            at=_ms(event["timestamp"]),
            installation_id=data["installation_id"],
            proposal_id=data["proposal_id"],
            content_id=data["content_id"],
            kind=data["kind"],
            to_state=data["to"],
            due_at=_ms(data["due_at"]),
            local_time=data["local_time"],
            timezone=data["timezone"],
            proposed_by=data["proposed_by"],
            for_person=data["for"],
        )

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
