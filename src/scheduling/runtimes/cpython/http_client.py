"""Outbound HTTP port over httpx. Never follows redirects: a 3xx is an answer to classify."""

from __future__ import annotations

import asyncio

import httpx

from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout


class HttpxClient:
    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client or httpx.AsyncClient(follow_redirects=False)

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        try:
            # httpx's timeout bounds each phase; wait_for bounds the whole exchange.
            return await asyncio.wait_for(self._exchange(request), request.timeout_s)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransportTimeout(type(exc).__name__) from exc
        except Exception as exc:
            # httpx raises InvalidURL, UnicodeError, ValueError… for URLs it cannot use:
            # to the caller, all of them are a request that did not get an answer.
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
            body, truncated = bytearray(), False
            async for chunk in response.aiter_raw():
                body += chunk
                if len(body) > request.max_body_bytes:
                    truncated = True
                    break
            headers = {name.lower(): value for name, value in response.headers.items()}
            return OutboundResponse(
                response.status_code, headers, bytes(body[: request.max_body_bytes]), truncated
            )

    async def aclose(self) -> None:
        await self._client.aclose()
