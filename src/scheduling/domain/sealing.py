"""The sealed-value format shared by both crypto adapters.

`v1.` + base64url(iv ‖ ciphertext ‖ tag), no padding: a 96-bit IV, AES-256-GCM,
the context string as associated data. Both runtimes must read each other's
output, so the framing lives here once.
"""

from __future__ import annotations

import base64
import logging

from scheduling.ports import Crypto, UnreadableSecret

log = logging.getLogger("scheduling")

PREFIX = "v1."
IV_BYTES = 12
TAG_BYTES = 16


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def frame(iv: bytes, ciphertext_and_tag: bytes) -> str:
    return PREFIX + b64url(iv + ciphertext_and_tag)


def unframe(sealed: str) -> tuple[bytes, bytes]:
    """(iv, ciphertext ‖ tag); raises UnreadableSecret when the framing is wrong."""
    if not isinstance(sealed, str) or not sealed.startswith(PREFIX):
        raise UnreadableSecret("unknown sealed format")
    try:
        raw = unb64url(sealed[len(PREFIX) :])
    except ValueError:
        raise UnreadableSecret("damaged sealed value") from None
    if len(raw) < IV_BYTES + TAG_BYTES:
        raise UnreadableSecret("damaged sealed value")
    return raw[:IV_BYTES], raw[IV_BYTES:]


async def open_or_none(crypto: Crypto, sealed: str, context: str, what: str) -> str | None:
    """The plaintext; None, logged as `what` (never the value), when it does not open under
    the current TOKEN_KEY (the key changed, or the value was damaged or moved)."""
    try:
        return await crypto.open(sealed, context)
    except UnreadableSecret:
        log.warning("%s does not open under TOKEN_KEY", what)
        return None
