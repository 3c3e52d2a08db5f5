"""Crypto port over `cryptography` (AES-GCM) and the standard library (SHA-256, HMAC)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from scheduling.domain import sealing
from scheduling.ports import UnreadableSecret


class CpythonCrypto:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    async def seal(self, plaintext: str, context: str) -> str:
        iv = os.urandom(sealing.IV_BYTES)
        return sealing.frame(iv, self._aead.encrypt(iv, plaintext.encode(), context.encode()))

    async def open(self, sealed: str, context: str) -> str:
        iv, data = sealing.unframe(sealed)
        try:
            return self._aead.decrypt(iv, data, context.encode()).decode()
        except (InvalidTag, UnicodeDecodeError):
            raise UnreadableSecret("sealed value does not open under this key") from None

    async def sha256_hex(self, value: str) -> str:
        return hashlib.sha256(value.encode()).hexdigest()

    async def hmac_sha256(self, key: bytes, message: bytes) -> bytes:
        return hmac.digest(key, message, "sha256")

    def random_token(self) -> str:
        return secrets.token_urlsafe(32)
