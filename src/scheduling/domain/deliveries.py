"""The runner's records of notification deliveries: an event on its way into the outbox, a
delivery claimed from it, where it goes, the message one attempt carries there, and how that
attempt ended.

The outbox store (`repository/outbox.py`) reads and writes them; the engine's delivery work
(`runner/delivery_work.py`) decides with them and hands them to a channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduling.domain.delivery_policy import DeliveryStatus


@dataclass(frozen=True)
class OutboxEvent:
    """An event for the outbox: written only if the settle (or refusal) of `schedule_id` in
    the same batch applies, once per subscribed endpoint."""

    id: str
    schedule_id: str
    type: str
    body: bytes  # the event's JSON: the body one message carries, or a digest line's facts
    # The schedule whose settle raises it, when not `schedule_id` itself: a completion raises
    # the stale notice of the other kind's waiting schedule it put out of date (issue 38).
    raised_by: str | None = None

    @property
    def settled_id(self) -> str:
        return self.raised_by or self.schedule_id


@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery claimed for sending."""

    id: str  # the webhook-id
    endpoint_id: str
    installation_id: str
    payload: bytes
    created_at: int  # the settle that wrote it
    attempt: int  # this claim's attempt number
    schedule_id: str = ""
    title_sealed: str | None = None  # a digest line's: its content's title, sealed
    tried_from: int = 0  # its event, or when a person last sent it again (the horizon's start)


@dataclass(frozen=True)
class DeliveryTarget:
    """Where a claimed delivery goes, read in the claim's batch."""

    id: str
    installation_id: str
    url: str  # what the pages show of it (all of it, unless its URL is its secret)
    secret_sealed: str  # what its kind keeps sealed: a signing secret, or the URL itself
    disabled: bool
    kind: str


@dataclass(frozen=True)
class Pacing:
    """What the outbox's claim is told of the channel kinds (`channels/kinds.py`), bound as
    values rather than written into its SQL."""

    digests: tuple[str, ...] = ()  # kinds whose endpoint's due deliveries are one message
    intervals: Mapping[str, int] = field(default_factory=dict)  # kind: ms between messages
    titled: Mapping[str, int] = field(default_factory=dict)  # kind: lines that name a title


@dataclass(frozen=True)
class Message:
    """What one attempt tells one endpoint: one delivery, or all a digest kind's endpoint had
    due as one digest (settled together, by endpoint, under the batch's lease)."""

    endpoint_id: str
    deliveries: tuple[ClaimedDelivery, ...]
    digest: bool = False

    @property
    def id(self) -> str:
        return self.deliveries[0].id

    @property
    def attempt(self) -> int:
        """The attempt it is: a digest is as far along as its most tried line."""
        return max(d.attempt for d in self.deliveries)

    @property
    def tried_from(self) -> int:
        """Where its retries started: a digest is tried as long as its newest line may be."""
        return max(d.tried_from for d in self.deliveries)


@dataclass(frozen=True)
class SettledMessage:
    """How one attempt at a message ended this time."""

    message: Message
    status: DeliveryStatus
    next_attempt_at: int | None
    finished_at: int | None
    attempted_at: int | None  # None: handed back unsent
    http_status: int | None
    error: str | None
    sent: bool  # a request left (False: the endpoint was gone or its secret unreadable)
    handed_back: bool = False  # claimed, never sent (a platform limit): waiting again, due now

    @classmethod
    def given_back(cls, message: Message, at: int) -> SettledMessage:
        """Claimed, never sent (a platform limit): waiting again, due at `at`, its last attempt
        kept and the one its claim counted given back."""
        return cls(message, DeliveryStatus.WAITING, at, None, None, None, None, False, True)
