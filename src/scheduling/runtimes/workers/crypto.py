"""Crypto port over WebCrypto (`crypto.subtle`): AES-256-GCM, SHA-256, HMAC-SHA256, random bytes."""

from __future__ import annotations

from typing import Any

import js
from pyodide.ffi import JsException, to_js

from scheduling.domain import sealing
from scheduling.ports import UnreadableSecret


def _js_bytes(data: bytes) -> Any:
    """A fresh Uint8Array holding a copy of `data`."""
    array = js.Uint8Array.new(len(data))
    array.assign(data)
    return array


def _js_object(values: dict[str, Any]) -> Any:
    return to_js(values, dict_converter=js.Object.fromEntries)


def _random_bytes(count: int) -> bytes:
    return bytes(js.crypto.getRandomValues(js.Uint8Array.new(count)).to_py())


class WebCrypto:
    def __init__(self, key: bytes) -> None:
        self._raw_key = key
        self._key: Any = None

    async def _aes_key(self) -> Any:
        if self._key is None:
            self._key = await js.crypto.subtle.importKey(
                "raw",
                _js_bytes(self._raw_key),
                _js_object({"name": "AES-GCM"}),
                False,
                to_js(["encrypt", "decrypt"]),
            )
        return self._key

    def _params(self, iv: bytes, context: str) -> Any:
        return _js_object(
            {
                "name": "AES-GCM",
                "iv": _js_bytes(iv),
                "additionalData": _js_bytes(context.encode()),
                "tagLength": 128,
            }
        )

    async def seal(self, plaintext: str, context: str) -> str:
        iv = _random_bytes(sealing.IV_BYTES)
        encrypted = await js.crypto.subtle.encrypt(
            self._params(iv, context), await self._aes_key(), _js_bytes(plaintext.encode())
        )
        return sealing.frame(iv, encrypted.to_bytes())

    async def open(self, sealed: str, context: str) -> str:
        iv, data = sealing.unframe(sealed)
        # Outside the try: a key WebCrypto will not import is a bug, not an unreadable value.
        key = await self._aes_key()
        try:
            decrypted = await js.crypto.subtle.decrypt(
                self._params(iv, context), key, _js_bytes(data)
            )
            return str(decrypted.to_bytes().decode())
        except (JsException, UnicodeDecodeError):
            raise UnreadableSecret("sealed value does not open under this key") from None

    async def sha256_hex(self, value: str) -> str:
        digest = await js.crypto.subtle.digest("SHA-256", _js_bytes(value.encode()))
        return str(digest.to_bytes().hex())

    async def hmac_sha256(self, key: bytes, message: bytes) -> bytes:
        hmac_key = await js.crypto.subtle.importKey(
            "raw",
            _js_bytes(key),
            _js_object({"name": "HMAC", "hash": "SHA-256"}),
            False,
            to_js(["sign"]),
        )
        signature = await js.crypto.subtle.sign("HMAC", hmac_key, _js_bytes(message))
        return bytes(signature.to_bytes())

    def random_token(self) -> str:
        return sealing.b64url(_random_bytes(32))
