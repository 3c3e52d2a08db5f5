"""The Standard Webhook channel (standardwebhooks.com): each attempt a POST of the event's
JSON body, with `webhook-id` (the same on every retry), `webhook-timestamp` and
`webhook-signature`, an HMAC-SHA256 under the endpoint's `whsec_` secret through the crypto
port.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Sequence

from scheduling.channels.port import Event, OpenTarget, post_attempt
from scheduling.domain.notifications import AttemptResult, body_of_test_event
from scheduling.domain.records import ClaimedDelivery, DeliveryTarget
from scheduling.domain.secrets import open_or_none, unb64url
from scheduling.ports import Crypto
from scheduling.services import Services

# -- the secret and the signature ------------------------------------------------------------------

log = logging.getLogger("scheduling")

SECRET_PREFIX = "whsec_"
KEY_BYTES = 32


def new_secret(random_token: str) -> str:
    """`random_token` is the crypto port's (32 random bytes, base64url): re-encoded as the
    standard's base64."""
    key = unb64url(random_token)
    if len(key) != KEY_BYTES:
        raise ValueError("a random token is 32 bytes")
    return SECRET_PREFIX + base64.b64encode(key).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key a secret stands for; ValueError when it is not one of ours."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("not a whsec_ secret")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("not base64") from None
    if len(key) != KEY_BYTES:
        raise ValueError("not 32 bytes")
    return key


async def signature(
    crypto: Crypto, secret: str, message_id: str, timestamp_s: int, body: bytes
) -> str:
    signed = f"{message_id}.{timestamp_s}.".encode() + body
    digest = await crypto.hmac_sha256(secret_key(secret), signed)
    return "v1," + base64.b64encode(digest).decode("ascii")


async def signed_headers(
    crypto: Crypto, secret: str, message_id: str, now_ms: int, body: bytes
) -> dict[str, str]:
    """The headers of one attempt: its own timestamp, signed with the endpoint's secret."""
    timestamp_s = now_ms // 1000
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp_s),
        "webhook-signature": await signature(crypto, secret, message_id, timestamp_s, body),
    }


def secret_context(installation_id: str, endpoint_id: str) -> str:
    """What a sealed signing secret is bound to: its installation and endpoint."""
    return f"webhook-secret:{installation_id}:{endpoint_id}"


async def seal_secret(crypto: Crypto, installation_id: str, endpoint_id: str, secret: str) -> str:
    return await crypto.seal(secret, secret_context(installation_id, endpoint_id))


# -- the channel -----------------------------------------------------------------------------------


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
        """None, logged, when the secret does not open under the current TOKEN_KEY."""
        context = secret_context(target.installation_id, target.id)
        what = f"endpoint {target.id}: signing secret"
        secret = await open_or_none(self.services.crypto, target.secret_sealed, context, what)
        if secret is None:
            return None
        return OpenTarget(target.id, target.installation_id, target.url, secret)

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        headers = await signed_headers(
            self.services.crypto, target.secret, event.id, now_ms, event.body
        )
        return await post_attempt(self.services.http, target.url, headers, event.body, now_ms)
