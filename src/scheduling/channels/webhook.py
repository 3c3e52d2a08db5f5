"""The Standard Webhook channel: each attempt a POST of the event's JSON body, signed for this
attempt with the endpoint's `whsec_` secret (`domain/webhook_signing.py`)."""

from __future__ import annotations

from scheduling.channels import http_post
from scheduling.channels.port import Event, OpenTarget
from scheduling.domain import webhook_signing
from scheduling.domain.delivery_policy import AttemptResult
from scheduling.domain.outbox import DeliveryTarget
from scheduling.ports import Crypto, HttpClient


class StandardWebhook:
    def __init__(self, http: HttpClient, crypto: Crypto) -> None:
        self.http = http
        self.crypto = crypto

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        secret = await webhook_signing.open_secret(
            self.crypto, target.installation_id, target.id, target.secret_sealed
        )
        if secret is None:
            return None
        return OpenTarget(target.id, target.installation_id, target.url, secret)

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        headers = await webhook_signing.signed_headers(
            self.crypto, target.secret, event.id, now_ms, event.body
        )
        return await http_post.post(self.http, target.url, headers, event.body, now_ms)
