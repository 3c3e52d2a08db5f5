"""The runner's records, as its stores read and write them and its work decides with them: a
notification event on its way into the outbox, a delivery claimed from it, the message one
attempt carries and how it ended; a due schedule row, its claim and how that ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduling.domain.notifications import DeliveryStatus
from scheduling.domain.outcomes import Attempt, Settlement, Status
from scheduling.domain.schedules import Command, ReleaseLine

# -- notification deliveries -----------------------------------------------------------------------


@dataclass(frozen=True)
class OutboxEvent:
    """An event for the outbox: written only if the settle (or refusal) of `schedule_id` in
    the same batch applies, once per subscribed endpoint."""

    id: str
    schedule_id: str
    type: str
    body: bytes  # the event's JSON: the body one message carries, or a digest line's facts
    # The schedule whose settle raises it, when not `schedule_id` itself: a completion raises
    # the stale notice of the other kind's waiting schedule it put out of date.
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


# -- schedule sends --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    """The other kind's waiting schedule of a due row's content: once the due row is done,
    its pin is out of date, and its stale notice names it."""

    id: str
    kind: str
    to_state: str
    version_id: str
    due_at: int
    timezone: str
    local_time: str
    attempt_count: int


@dataclass(frozen=True)
class DueRow:
    """A due schedule as the runner sees it: what it observed (for the compare-and-set),
    its command, and its installation's base URL and sealed token."""

    id: str
    installation_id: str
    status: Status
    attempt_count: int
    lease_token: str | None
    base_url: str
    token_sealed: str
    command: Command
    result_code: str | None = None  # while retrying: the last attempt's code
    timezone: str = "UTC"
    local_time: str = ""
    subscribed: frozenset[str] = frozenset()  # the events its installation's endpoints hear of
    collides: Waiting | None = None  # the other kind's waiting schedule of its content
    made_stale_by: str | None = None  # a collision that ran made its pin stale
    conflict: str | None = None  # what a person's check found moved since its pin
    release: ReleaseLine | None = None  # the release it is an item of

    @property
    def due_at(self) -> int:
        return self.command.due_at

    @property
    def leads(self) -> bool:
        """An item of a release with items queued behind it: its settle makes the next due."""
        return self.release is not None and bool(self.release.behind)

    def observed(self) -> tuple[object, ...]:
        return (self.id, self.status, self.lease_token or "", self.attempt_count)


@dataclass(frozen=True)
class Claim:
    """A due row this runner claimed, under its batch's lease token."""

    row: DueRow
    attempt: int  # this claim's attempt number (attempt_count after the claim)
    lease_until: int  # when its lease runs out


@dataclass(frozen=True)
class SettledClaim:
    """How one claim ends: where its schedule goes, and the attempt when a request left
    (None: nothing was sent, so no attempt is counted); and the event it raises, when its
    installation's endpoints hear of it."""

    claim: Claim
    settlement: Settlement
    attempt: Attempt | None
    event: OutboxEvent | None = None
    stale_event: OutboxEvent | None = None  # a completion's notice of the schedule it made stale
    release_event: OutboxEvent | None = None  # its release held or completed by this end

    @property
    def handed_back(self) -> bool:
        """Never sent and back to waiting (a platform limit), rather than ended."""
        return self.attempt is None and self.settlement.status in (
            Status.PENDING,
            Status.RETRYING,
        )


# A due row ended without a claim: its result code, and the cap that ended it (if one did).
Unsent = tuple[DueRow, str, str | None]
