"""The local runtime's ports over CPython's libraries: the wall clock, crypto over
`cryptography` and the standard library, outbound HTTP over httpx.

The HTTP client never follows redirects (a 3xx is an answer to classify) and decodes a body
as Workers' `fetch` does, so both runtimes read the same answer: gzip and deflate, never more
than the size limit decoded (`BodyDecoder`). Outside development it connects only to public
addresses, judged on what a name resolves to at connect time (`PublicAddressesOnly`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import os
import secrets
import socket
import ssl
import time
import zlib
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from scheduling.domain.addresses import is_public
from scheduling.domain.secrets import IV_BYTES, frame, unframe
from scheduling.ports import (
    AddressRefused,
    OutboundRequest,
    OutboundResponse,
    TransportError,
    TransportTimeout,
    UnreadableSecret,
)


class SystemClock:
    """The wall clock, in epoch milliseconds."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class CpythonCrypto:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    async def seal(self, plaintext: str, context: str) -> str:
        iv = os.urandom(IV_BYTES)
        return frame(iv, self._aead.encrypt(iv, plaintext.encode(), context.encode()))

    async def open(self, sealed: str, context: str) -> str:
        iv, data = unframe(sealed)
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


class HttpxClient:
    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client or httpx.AsyncClient(follow_redirects=False)

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        try:
            # httpx's timeout bounds each phase; wait_for bounds the whole exchange.
            return await asyncio.wait_for(self._exchange(request), request.timeout_s)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransportTimeout(type(exc).__name__) from exc
        except httpx.ConnectError as exc:
            if isinstance(exc.__cause__, NotPublic):
                raise AddressRefused(str(exc.__cause__)) from exc
            raise TransportError(type(exc).__name__) from exc
        except Exception as exc:
            # httpx raises InvalidURL, UnicodeError, ValueError… for URLs it cannot use, and
            # zlib.error for a body that does not decode: to the caller, all of them are a
            # request that did not get an answer (a Worker's fetch fails the same way).
            raise TransportError(type(exc).__name__) from exc

    async def _exchange(self, request: OutboundRequest) -> OutboundResponse:
        async with self._client.stream(
            request.method,
            request.url,
            headers=dict(request.headers),
            content=request.body,
            timeout=request.timeout_s,
            follow_redirects=False,
        ) as response:
            limit = request.max_body_bytes
            decoder = BodyDecoder(response.headers.get("content-encoding", ""))
            body, truncated = bytearray(), False
            async for chunk in response.aiter_raw():
                # Never more than one byte past the limit decoded, so a bomb costs nothing.
                # (Compressed bytes that decode to little are read on, as fetch reads them,
                # within the request's timeout.)
                body += decoder.decode(chunk, limit + 1 - len(body))
                if len(body) > limit:
                    truncated = True
                    break
            headers = {name.lower(): value for name, value in response.headers.items()}
            return OutboundResponse(response.status_code, headers, bytes(body[:limit]), truncated)

    async def aclose(self) -> None:
        await self._client.aclose()


def outbound_client(
    *, max_connections: int = 100, public_only: bool, tls: ssl.SSLContext | None = None
) -> HttpxClient:
    """A client whose pool holds at most `max_connections` connections (a call past them waits
    for one, within its timeout); `public_only` outside development. `tls`: a context shared
    by many clients (making one reads the CA bundle, about 0.3 s on a busy machine)."""
    tls = tls or httpx.create_ssl_context()
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=min(20, max_connections)
    )
    transport = (
        PublicOnlyTransport(limits, tls)
        if public_only
        else httpx.AsyncHTTPTransport(limits=limits, verify=tls)
    )
    # No proxy from the environment either: the guard must judge the address really dialled.
    client = httpx.AsyncClient(follow_redirects=False, transport=transport, trust_env=False)
    return HttpxClient(client)


class NotPublic(httpcore.ConnectError):
    """A name resolved to an address that is not public; nothing was sent."""


class PublicAddressesOnly(httpcore.AsyncNetworkBackend):
    """Resolves a name at connect time and connects to what it resolved to, only if every
    address it resolved to is public: checking the name alone, then letting the connection
    resolve it again, would let a name answer differently the second time."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(
                loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout
            )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"{host}: no address in time") from exc
        except OSError as exc:
            raise httpcore.ConnectError(f"{host}: {exc}") from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        if not addresses or not all(is_public(address) for address in addresses):
            raise NotPublic(f"{host} resolves to an address that is not public")
        for address in addresses[:-1]:
            with contextlib.suppress(httpcore.ConnectError):
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
        return await self._inner.connect_tcp(
            addresses[-1], port, timeout, local_address, socket_options
        )


class PublicOnlyTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a pool whose connections go through `PublicAddressesOnly`.
    (httpx does not take a network backend, so its pool is made again with one; the pinned
    httpx and httpcore are tested over real sockets.)"""

    def __init__(self, limits: httpx.Limits, tls: ssl.SSLContext) -> None:
        super().__init__(limits=limits, verify=tls)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=PublicAddressesOnly(),
        )


class BodyDecoder:
    """Decodes a body chunk by chunk, giving at most `room` bytes per call (at least 1), so a
    bomb costs nothing. Bytes that are not what their encoding says raise `zlib.error`, as
    fetch fails; an encoding it cannot decode (`br`, a list) is read as no body: its bytes
    say nothing we could trust (a 200 is then untrusted; a 503 is still a 503)."""

    def __init__(self, content_encoding: str) -> None:
        coding = content_encoding.strip().lower()
        self._as_sent = coding in ("", "identity")
        gzip = zlib.MAX_WBITS | 16
        wbits = {"gzip": gzip, "x-gzip": gzip, "deflate": zlib.MAX_WBITS}.get(coding)
        # "deflate" is zlib-wrapped (RFC 9110), but some servers send it raw.
        self._raw_fallback = coding == "deflate"
        self._inflate = zlib.decompressobj(wbits) if wbits else None

    def decode(self, chunk: bytes, room: int) -> bytes:
        if self._as_sent:
            return chunk
        if self._inflate is None or self._inflate.eof:
            return b""  # nothing to trust, or past the end of the stream
        # Input that would decode past `room` stays in unconsumed_tail and is never expanded.
        first, self._raw_fallback = self._raw_fallback, False
        try:
            return self._inflate.decompress(chunk, room)
        except zlib.error:
            if not first:  # only the first bytes tell a zlib header from raw deflate
                raise
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflate.decompress(chunk, room)
