"""The plugin's outbound port in-process, and the httpx `PluginCaller` the server uses.

`MockTransport(handler)` is the one `HttpClient` the tests plug into the plugin, as httpx's
`MockTransport` is for httpx: a handler answers each request and the transport keeps the
port's promises, so a test cannot pass on an answer a real adapter would never give.
`core_handler(core)` is the handler that is this fake Dee Wan.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from fake_core.core import FakeCore
from fake_core.install import PluginCaller
from scheduling.ports import (
    LimitReached,
    OutboundRequest,
    OutboundResponse,
    TransportError,
    TransportTimeout,
)

# Answers a request, at once or awaited; fails it by raising `TransportError` (a
# `TransportTimeout` for no answer) or, unsent, `LimitReached`.
Handler = Callable[[OutboundRequest], OutboundResponse | Awaitable[OutboundResponse]]


class MockTransport:
    """An `HttpClient` whose requests `handler` answers; `sent` is every request that left.

    As the port promises: the exchange is bounded by the request's `timeout_s` (then
    `TransportTimeout`), the body cut at its `max_body_bytes` (then `truncated`), header
    names lower-case, and a request refused with `LimitReached` was never sent. A handler
    that raises anything else plays an adapter breaking the contract.
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.sent: list[OutboundRequest] = []

    async def send(self, request: OutboundRequest) -> OutboundResponse:
        self.sent.append(request)
        try:
            async with asyncio.timeout(request.timeout_s):
                answer = await answered(self.handler, request)
        except LimitReached:
            self.sent.remove(request)
            raise
        except TimeoutError as exc:
            raise TransportTimeout(f"no answer within {request.timeout_s}s") from exc
        limit = request.max_body_bytes
        return OutboundResponse(
            answer.status,
            {name.lower(): value for name, value in answer.headers.items()},
            answer.body[:limit],
            answer.truncated or len(answer.body) > limit,
        )


async def answered(handler: Handler, request: OutboundRequest) -> OutboundResponse:
    """What `handler` answers, awaited if it must be: for a handler that wraps another."""
    answer = handler(request)
    if inspect.isawaitable(answer):
        answer = await answer
    assert isinstance(answer, OutboundResponse), answer
    return answer


def core_handler(core: FakeCore) -> Handler:
    """`core` answering what is sent under its base URL; anything else fails to connect."""

    async def answer(request: OutboundRequest) -> OutboundResponse:
        base = urlsplit(core.base_url)
        target = urlsplit(request.url)
        base_path = base.path.rstrip("/")
        if (target.scheme, target.netloc) != (base.scheme, base.netloc) or not (
            target.path.startswith(base_path + "/")
        ):
            raise TransportError(f"fake transport: cannot connect to {target.netloc}")
        path = target.path.removeprefix(base_path)
        if target.query:
            path += "?" + target.query
        # In a task of its own, as a core across a network answers in a later turn of the loop.
        status, headers, body = await asyncio.wait_for(
            core.handle(request.method, path, dict(request.headers), request.body),
            request.timeout_s,
        )
        return OutboundResponse(status, headers, body)

    return answer


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
