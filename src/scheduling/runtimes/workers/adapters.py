"""The Worker's ports over the platform's own objects: D1 through the `workers` SDK's env
wrapper, `crypto.subtle`, `fetch`, `Date.now()` and the installations' Durable Objects. No JS
shape leaks past here: D1's errors become `DatabaseError`, and a per-invocation limit, from D1,
`fetch` or a Durable Object, `LimitReached`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import js
from pyodide.ffi import JsException, jsnull, to_js

from scheduling.domain.secrets import IV_BYTES, b64url, frame, unframe
from scheduling.ports import (
    ClockUnavailable,
    DatabaseError,
    LimitReached,
    Meta,
    OutboundRequest,
    OutboundResponse,
    Result,
    Row,
    Statement,
    TransportError,
    TransportTimeout,
    UnreadableSecret,
)
from scheduling.runtimes.workers.bindings import limit_of


class WorkersClock:
    """The wall clock, in epoch milliseconds."""

    def now_ms(self) -> int:
        return int(js.Date.now())


async def read_at_most(stream: Any, limit: int) -> tuple[bytes, bool]:
    """(at most `limit` bytes of the JS ReadableStream `stream`, whether there was more); the
    rest is cancelled unread, so a body that is huge or never ends is not waited for."""
    if stream is None or stream is jsnull:  # no body (a 204, say): JS null
        return b"", False
    reader = stream.getReader()
    body = bytearray()
    while True:
        chunk = await reader.read()
        if chunk.done:
            return bytes(body), False
        body += chunk.value.to_bytes()
        if len(body) > limit:
            await reader.cancel()
            return bytes(body[:limit]), True


def _result(raw: Any) -> Result:
    meta = raw.get("meta") or {}
    rows = [dict(row) for row in raw.get("results") or []]
    return Result(
        rows, Meta(changes=int(meta.get("changes") or 0), last_row_id=meta.get("last_row_id"))
    )


def _shown(sql: str) -> str:
    return " ".join(sql.split())[:120]


def _error(exc: Exception, where: str) -> DatabaseError | LimitReached:
    """The port's error for a D1 failure: `LimitReached` when the invocation has used up its
    queries (the call did nothing), else a `DatabaseError` saying where."""
    message = str(exc)
    limit = limit_of(message)
    if limit is not None:
        return limit
    constraint = "constraint failed" in message.lower()
    return DatabaseError(f"{message} {where}", constraint=constraint)


def _in(sql: str) -> str:
    return f"in: {_shown(sql)}"


def _in_batch(statements: Sequence[D1Statement]) -> str:
    """Where a batch failed. D1's error is SQLite's message alone: it does not say which
    statement failed (Miniflare's D1 and workerd's client alike), so name the batch."""
    if not statements:
        return "in an empty batch"
    if len(statements) == 1:
        return _in(statements[0].sql)
    return f"in a batch of {len(statements)} statements, starting: {_shown(statements[0].sql)}"


class D1Statement:
    def __init__(self, stmt: Any, sql: str) -> None:
        self.js_statement = stmt
        self.sql = sql

    def bind(self, *values: Any) -> D1Statement:
        try:
            return D1Statement(self.js_statement.bind(*values), self.sql)
        except JsException as exc:  # e.g. D1_TYPE_ERROR for a value D1 cannot bind
            raise _error(exc, _in(self.sql)) from None

    async def _call(self, method: str) -> Any:
        try:
            return await getattr(self.js_statement, method)()
        except JsException as exc:
            raise _error(exc, _in(self.sql)) from None

    async def all(self) -> Result:
        return _result(await self._call("all"))

    async def run(self) -> Result:
        return _result(await self._call("run"))

    async def first(self) -> Row | None:
        row = await self._call("first")
        return dict(row) if row is not None else None


class D1Database:
    def __init__(self, binding: Any) -> None:
        self._binding = binding

    def prepare(self, sql: str) -> D1Statement:
        return D1Statement(self._binding.prepare(sql), sql)

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        own = [stmt for stmt in statements if isinstance(stmt, D1Statement)]
        if len(own) != len(statements):
            raise TypeError("batch() takes statements prepared on this database")
        try:
            raw = await self._binding.batch([stmt.js_statement for stmt in own])
        except JsException as exc:
            raise _error(exc, _in_batch(own)) from None
        return [_result(item) for item in raw]


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
        iv = _random_bytes(IV_BYTES)
        encrypted = await js.crypto.subtle.encrypt(
            self._params(iv, context), await self._aes_key(), _js_bytes(plaintext.encode())
        )
        return frame(iv, encrypted.to_bytes())

    async def open(self, sealed: str, context: str) -> str:
        iv, data = unframe(sealed)
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
        return b64url(_random_bytes(32))


class WorkersFetch:
    async def send(self, request: OutboundRequest) -> OutboundResponse:
        init: dict[str, Any] = {
            "method": request.method,
            "headers": _js_object(dict(request.headers)),
            # A 3xx is an answer to classify, never something to follow.
            "redirect": "manual",
            # Aborts the whole exchange, body included. The caller admits the request to
            # one of the invocation's connections first, so this never times its wait.
            "signal": js.AbortSignal.timeout(int(request.timeout_s * 1000)),
        }
        if request.body is not None:
            init["body"] = request.body.decode("utf-8")
        try:
            response = await js.fetch(request.url, _js_object(init))
            body, truncated = await read_at_most(response.body, request.max_body_bytes)
        except JsException as exc:
            if getattr(exc, "name", "") in ("TimeoutError", "AbortError"):
                raise TransportTimeout(exc.name) from None
            limit = limit_of(str(exc))
            if limit is not None:  # refused before anything was sent
                raise limit from None
            raise TransportError(getattr(exc, "name", "fetch failed")) from None
        except Exception as exc:
            raise TransportError(type(exc).__name__) from None
        headers = {str(name).lower(): str(value) for name, value in response.headers.entries()}
        return OutboundResponse(int(response.status), headers, body, truncated)


class DurableClocks:
    """`ScheduleClocks` over the Durable Object namespace binding (the SDK's wrapper)."""

    def __init__(self, binding: Any) -> None:
        self._binding = binding

    async def arm(self, installation_id: str, wake_at: int) -> bool:
        try:
            stub = self._binding.getByName(installation_id)
            return bool(await stub.arm(installation_id, wake_at))
        except JsException as exc:
            failed = ClockUnavailable(getattr(exc, "name", "the clock did not answer"))
            raise (limit_of(str(exc)) or failed) from None
