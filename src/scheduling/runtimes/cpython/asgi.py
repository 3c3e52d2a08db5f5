"""Serve the core App over ASGI, plus the development-only `/__scheduled` trigger and the
server's lifespan (what runs beside the requests).

The request the core sees is the path the client sent (`raw_path`, so `%2F` is not a
separator, as in the Worker) under PUBLIC_ORIGIN's host, never the `Host` header's: a Host of
`x/admin/status#` must not change which route answers.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any
from urllib.parse import quote_from_bytes, urlsplit

from scheduling.app import App
from scheduling.config import Misconfigured
from scheduling.domain.wording import Refusal, invalid_request
from scheduling.http.requests import MAX_BODY_BYTES, Headers, Request
from scheduling.http.responses import Response, json_response
from scheduling.runner.tick import window_problem, window_words
from scheduling.services import log

# The ASGI spec's types (as servers and httpx's ASGITransport declare them).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Tick = Callable[[int | None], Awaitable[Any]]
Lifespan = Callable[[], AbstractAsyncContextManager[None]]

# The names a developer's own terminal reaches the local server by (with the served port).
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_EPOCH_MS = re.compile(r"[0-9]{1,15}")
# Characters a path or query may carry as they are; anything else is percent-encoded,
# so `#`, `?` in a path, spaces and raw bytes cannot change how the URL is read.
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def app_tick(app: App) -> Tick:
    """What `/__scheduled` runs: the tick of a cron invocation whose `scheduledTime` is the
    `time` asked for (now, without it)."""

    async def tick(scheduled_time: int | None) -> dict[str, int]:
        if scheduled_time is None:
            scheduled_time = app.services.clock.now_ms()
        return await app.tick(scheduled_time)

    return tick


class AsgiApp:
    """`app` over ASGI; `tick`: what `/__scheduled` runs; `lifespan`: entered when the server
    starts and left when it stops."""

    def __init__(
        self, app: App, tick: Tick | None = None, lifespan: Lifespan | None = None
    ) -> None:
        self.app = app
        self._tick = tick
        self._lifespan = lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send, self._lifespan)
            return
        if scope["type"] != "http":
            return
        request = _to_request(scope, self._origin())
        read = await _read_body(receive)
        if read is None:  # the client left before its body arrived: nobody to answer
            return
        request.body, complete = read
        if request.path == "/__scheduled":
            response = await self._scheduled(request, _served_port(scope))
        else:
            response = await self.app.handle(request)
        if not complete:
            # The rest of the body was never read: the connection cannot carry another request.
            response.headers.append(("connection", "close"))
        # The length said up front, never chunked: a chunked answer's end comes in a segment of
        # its own, which a client that delays its ACKs waits ~40 ms for. HEAD says GET's length.
        headers = [(k.encode(), v.encode()) for k, v in response.headers]
        headers.append((b"content-length", str(response.content_length).encode()))
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": response.body})
        later = self.app.after_request()  # this request's task, after its answer
        if later is not None:
            await later

    def _origin(self) -> str:
        try:
            return self.app.services.config.public_origin
        except Misconfigured:
            # `serve` refuses to start without it; the origin is never read to route anyway.
            return "http://localhost"

    async def _scheduled(self, request: Request, served_port: int) -> Response:
        """Like `wrangler dev --test-scheduled`: one tick, answered when it has finished."""
        config = self.app.services.config
        if self._tick is None or not config.is_development:
            return self.app.render(request, Refusal(404, "not_found", "There is nothing here."))
        try:
            _check_trigger(request, config.public_origin, served_port)
            when = _tick_time(request, self.app.services.clock.now_ms(), config.max_lateness_ms)
        except Refusal as refusal:
            return self.app.render(request, refusal)
        except Misconfigured as exc:
            # `serve` refuses to start with a bad value; said here by its name only.
            misconfigured = Refusal(500, "misconfigured", f"{exc.name} is not configured correctly")
            return self.app.render(request, misconfigured)
        try:
            report = await self._tick(when)
        except Exception:  # its `runner_tick_failed` line is written; the traceback is for you
            log.exception("development tick failed")
            failed = Refusal(500, "internal_error", "The tick failed; see the terminal.")
            return self.app.render(request, failed)
        return json_response({"code": "tick_finished", "report": report}).with_base_headers()


def _check_trigger(request: Request, public_origin: str, served_port: int) -> None:
    """Refuse a request to `/__scheduled` that a web page could have made.

    Any page the developer opens could aim a request at localhost, so a cross-site or
    same-site fetch is refused, as on the management pages, and so is an `Origin` other than
    the server's own (a browser without Fetch Metadata, such as an older Safari, still sends
    it; a terminal sends none). A page on a name that the attacker rebinds to 127.0.0.1 is
    same-origin with itself, so the `Host` must also be one this server is known by:
    PUBLIC_ORIGIN's, or a loopback name with the served port.
    """
    if request.method not in ("GET", "POST"):
        raise Refusal(
            405, "method_not_allowed", "Use GET or POST.", headers=[("allow", "GET, POST")]
        )
    host = request.headers.get("host", "").lower()
    if host not in _trigger_hosts(public_origin, served_port):
        raise Refusal(
            403,
            "host_not_allowed",
            "Run the tick through localhost or PUBLIC_ORIGIN's host and this server's port.",
        )
    origin = request.headers.get("origin")
    foreign = origin is not None and origin.lower() not in _own_origins(public_origin, served_port)
    if foreign or request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        raise Refusal(403, "cross_site_request", "Run the tick from a terminal, not a web page.")


def _trigger_hosts(public_origin: str, served_port: int) -> set[str]:
    """Every spelling of `Host` that names PUBLIC_ORIGIN, or a loopback name on this port."""
    origin = urlsplit(public_origin)
    default = 443 if origin.scheme == "https" else 80
    name = (origin.hostname or "").lower()
    if ":" in name:  # an IPv6 literal, bracketed in a Host
        name = f"[{name}]"
    hosts = {f"{name}:{origin.port or default}"} | _loopback_hosts(served_port)
    # A Host without a port stands for the scheme's default one.
    if origin.port in (None, default):
        hosts.add(name)
    return hosts


def _own_origins(public_origin: str, served_port: int) -> set[str]:
    """The origins of this server's own pages: PUBLIC_ORIGIN's, and the plain-HTTP loopback
    names on the served port."""
    return {public_origin.lower()} | {f"http://{h}" for h in _loopback_hosts(served_port)}


def _loopback_hosts(served_port: int) -> set[str]:
    hosts = {f"{loopback}:{served_port}" for loopback in _LOOPBACK_NAMES}
    if served_port == 80:  # without a port, a Host or an origin stands for 80
        hosts |= set(_LOOPBACK_NAMES)
    return hosts


def _tick_time(request: Request, now_ms: int, max_lateness_ms: int) -> int | None:
    """The `scheduledTime` `/__scheduled` stands for (None: now), or a refusal."""
    when = request.query.get("time")
    if when is None:
        return None
    if not _EPOCH_MS.fullmatch(when):
        raise invalid_request(window_words(max_lateness_ms))
    problem = window_problem(int(when), now_ms, max_lateness_ms)
    if problem is not None:
        raise invalid_request(problem)
    return int(when)


def _served_port(scope: Scope) -> int:
    server = scope.get("server")
    return int(server[1]) if server and server[1] else 80


def _to_request(scope: Scope, origin: str) -> Request:
    headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    if not raw_path.startswith(b"/"):  # absolute-form or `*`: no route of ours
        raw_path = b"/" + raw_path
    # The scheme of this server's own socket (plain HTTP unless it was given TLS), never
    # PUBLIC_ORIGIN's: a page that needs HTTPS must not believe it got it.
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    url = f"{scheme}://{urlsplit(origin).netloc}" + quote_from_bytes(raw_path, safe=_PATH_SAFE)
    query = scope.get("query_string", b"")
    if query:
        url += "?" + quote_from_bytes(query, safe=_QUERY_SAFE)
    # The peer's address, never a header: nothing in front of this server is trusted to set one.
    peer = scope.get("client")
    return Request(scope["method"], url, headers, client=str(peer[0]) if peer else None)


async def _read_body(receive: Receive) -> tuple[bytes, bool] | None:
    """(body, read to the end), or None if the client left. Stops one byte past the cap,
    so the app refuses that body without holding the rest of it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"".join(chunks)[: MAX_BODY_BYTES + 1], not message.get("more_body")
        if not message.get("more_body"):
            return b"".join(chunks), True


async def _lifespan(receive: Receive, send: Send, lifespan: Lifespan | None) -> None:
    async with AsyncExitStack() as running:
        while True:
            try:
                message = await receive()
            except asyncio.CancelledError:  # a forced stop: what it runs stops all the same
                return
            if message["type"] == "lifespan.startup":
                if lifespan is not None:
                    await running.enter_async_context(lifespan())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await running.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return
