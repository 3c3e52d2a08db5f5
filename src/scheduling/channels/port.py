"""The channel port: one attempt at telling one endpoint of one event.

The engine's delivery work opens each endpoint once per invocation (`open`: what it needs
unsealed), makes each claimed message's event (`event`: one delivery's body, or a digest of
an endpoint's) and hands it to `deliver`, within a connection slot. Nothing
an endpoint answers, or fails to, makes `deliver` raise: one attempt, one `AttemptResult`.
Only the platform's subrequest limit does (`LimitReached`), and then no request left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduling.domain.deliveries import ClaimedDelivery, DeliveryTarget
from scheduling.domain.delivery_policy import AttemptResult


@dataclass(frozen=True)
class OpenTarget:
    """An endpoint as a channel sends to it, its secrets unsealed: kept only as long as the
    invocation that opened it."""

    id: str
    installation_id: str
    url: str
    secret: str  # a webhook's signing secret ("" for a chat endpoint, whose URL is its secret)


@dataclass(frozen=True)
class Event:
    """What one attempt carries: the delivery's id (the same on every retry) and its body."""

    id: str
    body: bytes


class Channel(Protocol):
    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        """What one attempt at `deliveries` (one, unless its kind is a digest) carries."""
        ...

    def test_event(self, target: DeliveryTarget, event_id: str, at: int) -> Event:
        """What "Send test event" carries."""
        ...

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        """The target unsealed; None (logged) when TOKEN_KEY cannot open what it keeps."""
        ...

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        """One attempt, its answer judged by the delivery table (`delivery_policy`)."""
        ...
