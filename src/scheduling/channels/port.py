"""The channel port: one attempt at telling one endpoint of one event; and the one POST every
channel makes, given 10 s from its connection slot, following no redirect, reading at most
64 KiB and judged by the delivery table.

Nothing an endpoint answers, or fails to, makes `deliver` raise: one attempt, one
`AttemptResult`. Only the platform's subrequest limit does (`LimitReached`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduling.domain.notifications import MAX_ANSWER_BYTES, TIMEOUT_MS, AttemptResult, classify
from scheduling.domain.records import ClaimedDelivery, DeliveryTarget
from scheduling.ports import HttpClient, OutboundRequest, answer_to

# -- the port --------------------------------------------------------------------------------------


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
        """One attempt, its answer judged by the delivery table (`DELIVERY_TABLE`)."""
        ...


# -- one POST --------------------------------------------------------------------------------------

USER_AGENT = "Scheduling-Webhooks/1 (Dee Wan plugin)"


async def post_attempt(
    http: HttpClient, url: str, headers: Mapping[str, str], body: bytes, now_ms: int
) -> AttemptResult:
    request = OutboundRequest(
        "POST",
        url,
        {**headers, "user-agent": USER_AGENT},
        body,
        TIMEOUT_MS / 1000,
        MAX_ANSWER_BYTES,
    )
    answer = await answer_to(http, request, "notification send")
    return classify(answer, now_ms=now_ms)
