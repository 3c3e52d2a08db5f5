"""The runner's records of notification deliveries: an event on its way into the outbox, a
delivery claimed from it, where that delivery goes, and how one attempt at it ended.

The outbox store (`repository/outbox.py`) reads and writes them; the engine's delivery work
(`runner/delivery_work.py`) decides with them and hands them to a channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.delivery_policy import DeliveryStatus


@dataclass(frozen=True)
class OutboxEvent:
    """An event for the outbox: written only if the settle (or refusal) of `schedule_id` in
    the same batch applies, once per subscribed endpoint."""

    id: str
    schedule_id: str
    type: str
    body: bytes


@dataclass(frozen=True)
class ClaimedDelivery:
    id: str  # the webhook-id
    endpoint_id: str
    installation_id: str
    payload: bytes
    created_at: int  # the settle that wrote it
    attempt: int  # this claim's attempt number


@dataclass(frozen=True)
class DeliveryTarget:
    """Where a claimed delivery goes, read in the claim's batch."""

    id: str
    installation_id: str
    url: str
    secret_sealed: str
    disabled: bool


@dataclass(frozen=True)
class SettledDelivery:
    """How one claimed delivery ended this time."""

    delivery: ClaimedDelivery
    status: DeliveryStatus
    next_attempt_at: int | None
    finished_at: int | None
    attempted_at: int | None  # None: handed back unsent
    http_status: int | None
    error: str | None
    sent: bool  # a request left (False: the endpoint was gone or its secret unreadable)
    handed_back: bool = False  # claimed, never sent (a platform limit): waiting again, due now

    @classmethod
    def given_back(cls, delivery: ClaimedDelivery, at: int) -> SettledDelivery:
        """Claimed, never sent (a platform limit): waiting again, due at `at`, its last attempt
        kept and the one its claim counted given back."""
        return cls(delivery, DeliveryStatus.WAITING, at, None, None, None, None, False, True)
