"""Outbound HTTP port over httpx. Never follows redirects: a 3xx is an answer to classify.

Dee Wan is asked for `accept-encoding: identity` (by `dee_wan.py`, for both runtimes). A
core that compresses anyway is decoded here, as Workers' `fetch` decodes it, so the two
runtimes read the same answer: gzip and deflate (zlib-wrapped or raw), with the size limit
applied to the decoded bytes and never more than that decoded, whatever the body expands to.
As in fetch, bytes that are not what their encoding says fail the exchange, while a stream
cut short gives what it decoded so far (then judged like any answer). Anything else (`br`,
which fetch would decode, or a list of codings) is read as no body: nothing to trust.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib

import httpx

from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout
from scheduling.runtimes.cpython import h11_headers

h11_headers.install()  # httpx reads answers' heads with h11: each line in linear time


def shared_tls() -> ssl.SSLContext:
    """The TLS context httpx would make for a client, to share between many."""
    return httpx.create_ssl_context()


class HttpxClient:
    def __init__(
        self, client: httpx.AsyncClient | None = None, *, tls: ssl.SSLContext | None = None
    ) -> None:
        """`tls`: a context shared by many clients (making one reads the CA bundle, about
        0.3 s on a busy machine)."""
        self._client = client or httpx.AsyncClient(follow_redirects=False, verify=tls or True)

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        try:
            # httpx's timeout bounds each phase; wait_for bounds the whole exchange.
            return await asyncio.wait_for(self._exchange(request), request.timeout_s)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransportTimeout(type(exc).__name__) from exc
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
            decoder = BodyDecoder.for_encoding(response.headers.get("content-encoding", ""))
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


class BodyDecoder:
    """Decodes a body chunk by chunk, giving at most `room` bytes per call."""

    @staticmethod
    def for_encoding(content_encoding: str) -> BodyDecoder:
        coding = content_encoding.strip().lower()
        if coding in ("gzip", "x-gzip"):
            return _Inflate(zlib.MAX_WBITS | 16)
        if coding == "deflate":
            return _Inflate(zlib.MAX_WBITS, raw_fallback=True)
        if coding in ("", "identity"):
            return BodyDecoder()
        return _Unreadable()

    def decode(self, chunk: bytes, room: int) -> bytes:
        return chunk


class _Unreadable(BodyDecoder):
    """An encoding this runtime cannot decode: its bytes say nothing we could trust, so the
    answer is read as having no body (a 200 is then untrusted; a 503 is still a 503)."""

    def decode(self, chunk: bytes, room: int) -> bytes:
        return b""


class _Inflate(BodyDecoder):
    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._inflate = zlib.decompressobj(wbits)
        # "deflate" is zlib-wrapped (RFC 9110), but some servers send it raw.
        self._raw_fallback = raw_fallback

    def decode(self, chunk: bytes, room: int) -> bytes:
        if self._inflate.eof:
            return b""  # anything after the end of the stream is ignored
        # `room` is at least 1 (0 would mean no limit); input that would decode past it
        # stays in unconsumed_tail and is never expanded.
        first, self._raw_fallback = self._raw_fallback, False
        try:
            return self._inflate.decompress(chunk, room)
        except zlib.error:
            if not first:  # only the first bytes tell a zlib header from raw deflate
                raise
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflate.decompress(chunk, room)
