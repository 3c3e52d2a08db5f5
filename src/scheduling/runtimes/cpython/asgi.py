"""Serve the core App over ASGI, plus the development-only `/__scheduled` trigger."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...app import App
from ...requests import Headers, Request
from ...responses import Response, error_response, json_response

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Tick = Callable[[int | None], Awaitable[Any]]

MAX_BODY = 64 * 1024


class AsgiApp:
    def __init__(self, app: App, tick: Tick | None = None) -> None:
        self.app = app
        self._tick = tick

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body, too_large = await _read_body(receive)
        request = _to_request(scope, body)
        if too_large:
            response = error_response(413, "body_too_large").with_base_headers()
        elif request.path == "/__scheduled":
            response = await self._scheduled(request)
        else:
            response = await self.app.handle(request)
        await send(
            {
                "type": "http.response.start",
                "status": response.status,
                "headers": [(k.encode(), v.encode()) for k, v in response.headers],
            }
        )
        await send({"type": "http.response.body", "body": response.body})

    async def _scheduled(self, request: Request) -> Response:
        """Like `wrangler dev --test-scheduled`: one tick, answered when it has finished."""
        if self._tick is None or not self.app.services.config.is_development:
            return error_response(404, "not_found").with_base_headers()
        when = request.query.get("time")
        if when is not None and not when.isdigit():
            return error_response(400, "invalid_request", "time must be epoch milliseconds")
        report = await self._tick(int(when) if when else None)
        return json_response({"code": "tick_finished", "report": report}).with_base_headers()


def _to_request(scope: Scope, body: bytes) -> Request:
    headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
    host = headers.get("host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
    query = scope.get("query_string", b"").decode("latin-1")
    url = f"{scope.get('scheme', 'http')}://{host}{scope['path']}" + (f"?{query}" if query else "")
    return Request(scope["method"], url, headers, body)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= MAX_BODY:
            chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks), size > MAX_BODY


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
