"""Outbound HTTP port over httpx. Never follows redirects: a 3xx is an answer to classify."""

from __future__ import annotations

import asyncio

import httpx

from ...ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout


class HttpxClient:
    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        self._client = client or httpx.AsyncClient(follow_redirects=False)

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        try:
            # httpx's timeout bounds each phase; wait_for bounds the whole exchange.
            response = await asyncio.wait_for(
                self._client.request(
                    request.method,
                    request.url,
                    headers=dict(request.headers),
                    content=request.body,
                    timeout=request.timeout_s,
                    follow_redirects=False,
                ),
                request.timeout_s,
            )
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransportTimeout(type(exc).__name__) from exc
        except httpx.HTTPError as exc:
            raise TransportError(type(exc).__name__) from exc
        headers = {name.lower(): value for name, value in response.headers.items()}
        return OutboundResponse(response.status_code, headers, response.content)

    async def aclose(self) -> None:
        await self._client.aclose()
