"""The Standard Webhook channel: each attempt a POST of the event's JSON body, signed for this
attempt with the endpoint's `whsec_` secret (`webhook_signing.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.channels import http_post, webhook_signing
from scheduling.channels.port import Event, OpenTarget
from scheduling.domain.deliveries import ClaimedDelivery, DeliveryTarget
from scheduling.domain.delivery_policy import AttemptResult
from scheduling.domain.notification_events import body_of_test_event
from scheduling.services import Services


class StandardWebhook:
    def __init__(self, services: Services) -> None:
        self.services = services  # its HTTP client and crypto are read when used
        self.public_origin = services.config.public_origin

    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        [delivery] = deliveries
        return Event(delivery.id, delivery.payload)

    def test_event(self, target: DeliveryTarget, event_id: str, at: int) -> Event:
        body = body_of_test_event(self.public_origin, target.installation_id, target.id, at)
        return Event(event_id, body)

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        secret = await webhook_signing.open_secret(
            self.services.crypto, target.installation_id, target.id, target.secret_sealed
        )
        if secret is None:
            return None
        return OpenTarget(target.id, target.installation_id, target.url, secret)

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        headers = await webhook_signing.signed_headers(
            self.services.crypto, target.secret, event.id, now_ms, event.body
        )
        return await http_post.post(self.services.http, target.url, headers, event.body, now_ms)
