"""Adapters between the fake core and HTTP clients.

`FakeCoreTransport` is the plugin's `HttpClient` port wired to a FakeCore in
the same process; `httpx_caller` is the `PluginCaller` the server uses to
reach a real plugin.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import httpx

from fake_core.core import FakeCore
from fake_core.install import PluginCaller
from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout


class FakeCoreTransport:
    """Routes requests under `core.base_url` to the core; anything else fails to connect."""

    def __init__(self, core: FakeCore) -> None:
        self.core = core

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        base = urlsplit(self.core.base_url)
        target = urlsplit(request.url)
        base_path = base.path.rstrip("/")
        if (target.scheme, target.netloc) != (base.scheme, base.netloc) or not (
            target.path.startswith(base_path + "/")
        ):
            raise TransportError(f"fake transport: cannot connect to {target.netloc}")
        path = target.path.removeprefix(base_path)
        if target.query:
            path += "?" + target.query
        try:
            status, headers, body = await asyncio.wait_for(
                self.core.handle(request.method, path, dict(request.headers), request.body),
                timeout=request.timeout_s,
            )
        except TimeoutError as exc:  # a delay longer than the client's patience
            raise TransportTimeout(f"no answer within {request.timeout_s}s") from exc
        # As the port promises: never more of the body than the caller will read.
        limit = request.max_body_bytes
        return OutboundResponse(
            status, {k.lower(): v for k, v in headers.items()}, body[:limit], len(body) > limit
        )


def httpx_caller(client: httpx.AsyncClient) -> PluginCaller:
    """A PluginCaller over httpx; never follows redirects."""

    async def call(
        method: str, url: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        response = await client.request(
            method, url, headers=headers, content=body, follow_redirects=False
        )
        return response.status_code, dict(response.headers), response.content

    return call
