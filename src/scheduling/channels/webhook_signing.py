"""Standard Webhooks (standardwebhooks.com): the signing secret's format and each delivery's
three headers.

A secret is `whsec_` + base64 of 32 random bytes; the key is those bytes. A
delivery carries `webhook-id` (the same on every retry of one event to one
endpoint), `webhook-timestamp` (Unix seconds of this attempt) and
`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. The HMAC
goes through the crypto port, so it is WebCrypto's on Workers and the standard
library's on CPython.
"""

from __future__ import annotations

import base64
import binascii
import logging

from scheduling.domain import sealing
from scheduling.ports import Crypto

log = logging.getLogger("scheduling")

SECRET_PREFIX = "whsec_"
KEY_BYTES = 32


def new_secret(random_token: str) -> str:
    """`random_token` is the crypto port's (32 random bytes, base64url): re-encoded as the
    standard's base64."""
    key = sealing.unb64url(random_token)
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


async def open_secret(
    crypto: Crypto, installation_id: str, endpoint_id: str, sealed: str
) -> str | None:
    """The raw secret; None, logged, when it does not open under the current TOKEN_KEY."""
    context = secret_context(installation_id, endpoint_id)
    what = f"endpoint {endpoint_id}: signing secret"
    return await sealing.open_or_none(crypto, sealed, context, what)
