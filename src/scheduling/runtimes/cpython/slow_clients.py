"""uvicorn's h11 protocol with limits on a request's head (a deadline and a size), a cap on
the connections open at once, and its own answers written like the app's.

uvicorn times out an idle keep-alive connection but not one that sends its
headers a byte at a time (slowloris): such a connection stays open for as
long as the client likes. Here every request head, the first on a connection
and each later one, must be complete within `header_timeout_s`, or the
connection is closed. The body's deadline is the ASGI adapter's
(`asgi.BODY_TIMEOUT_S`).

h11's `max_incomplete_event_size` bounds only a head still incomplete, so a
head of 60 KB in one write was served while the same head in 1 KB pieces was
refused. Here a head larger than `max_head_bytes` is refused (400, connection
closed) however its bytes arrive.

The server never holds more than `max_connections` connections (set below the
process's open-file limit by `startup.py`): a flood of half-sent heads once took every
file descriptor, and an honest request waited 9.8 s. Past the cap, the connection that
has waited longest for a head (a slow client's, or an idle keep-alive one) is closed to
make room; when every connection has a request under way, the new one is answered 503
and closed at once. Either is logged once per interval with a count (`repeated_logs.py`).

What uvicorn answers by itself, before the app sees a request (a bad request line or
header, a head over the limit, a target that is not ASCII), carries the security headers
of every other answer, a JSON refusal with its code, and a `Content-Length`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from scheduling.http.responses import BASE_HEADERS, STRICT_TRANSPORT
from scheduling.runtimes.cpython import h11_headers

log = logging.getLogger("scheduling")

HEADER_TIMEOUT_S = 10.0
h11_headers.install()  # each header line checked in linear time


class HeadLimitedConnection(h11.Connection):
    """An h11 server connection that refuses a request head over `max_head_bytes`.

    A head's size is what h11 takes out of its receive buffer to make the `Request` event:
    measured there, it does not depend on how the bytes were split on the wire. (h11's
    receive buffer and event extraction are internal; the pinned h11 is tested over a real
    socket, with the head in one write and in pieces.)
    """

    def __init__(self, max_head_bytes: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self._max_head_bytes = max_head_bytes

    def _extract_next_receive_event(self) -> Any:
        head_expected = self.their_state is h11.IDLE
        buffered = len(self._receive_buffer)
        event = super()._extract_next_receive_event()
        head_bytes = buffered - len(self._receive_buffer)
        if head_expected and isinstance(event, h11.Request) and head_bytes > self._max_head_bytes:
            # Raised where h11 raises its own: the peer's state becomes ERROR, and uvicorn
            # answers 400 and closes the connection.
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        return event


def server_answer(
    status: int, reason: str, code: str, message: str, *, https: bool = False
) -> list[bytes]:
    """An answer the server writes itself: (head, body) as bytes, a JSON refusal with the
    security headers every answer carries (with `https`, PUBLIC_ORIGIN being https,
    Strict-Transport-Security too), its length, and `Connection: close`."""
    body = json.dumps({"code": code, "message": message}, separators=(",", ":")).encode()
    headers = [
        ("content-type", "application/json"),
        *BASE_HEADERS,
        *([STRICT_TRANSPORT] if https else []),
        ("content-length", str(len(body))),
        ("connection", "close"),
    ]
    if status == 503:
        headers.append(("retry-after", "1"))
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return [(head + "\r\n").encode("ascii"), body]


@dataclass(frozen=True)
class ConnectionRules:
    """One server's limits on its connections, and those of its connections waiting for a
    head, the longest-waiting first (a dict keeps its order): shared by all of them, as the
    cap counts them all."""

    header_timeout_s: float
    max_head_bytes: int
    max_connections: int | None
    https: bool
    waiting: dict[TimedH11Protocol, None] = field(default_factory=dict)


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under one server's `rules` (`timed_h11_protocol` makes the
    class for a server)."""

    rules: ClassVar[ConnectionRules]
    _head_deadline: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = HeadLimitedConnection(self.rules.max_head_bytes)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._expect_head()
        cap = self.rules.max_connections
        if cap is not None and len(self.connections) > cap:
            self._make_room(cap)

    def _make_room(self, cap: int) -> None:
        oldest = next((other for other in self.rules.waiting if other is not self), None)
        if oldest is not None:
            log.warning(
                "connections: at the cap of %d, the one waiting longest for a head was closed",
                cap,
            )
            oldest._cancel_deadline()
            oldest.transport.close()
            return
        log.warning("connections: at the cap of %d, a new one was refused", cap)
        self._cancel_deadline()
        self.transport.writelines(
            server_answer(
                503,
                "Service Unavailable",
                "server_busy",
                "Too many connections are open; try again in a second.",
                https=self.rules.https,
            )
        )
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in
            self._cancel_deadline()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request it could not read, as the app would write it."""
        self.transport.writelines(
            server_answer(
                400,
                "Bad Request",
                "invalid_request",
                "The request could not be read.",
                https=self.rules.https,
            )
        )
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._expect_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _expect_head(self) -> None:
        self._cancel_deadline()
        self._head_deadline = self.loop.call_later(self.rules.header_timeout_s, self._head_too_slow)
        self.rules.waiting[self] = None

    def _cancel_deadline(self) -> None:
        self.rules.waiting.pop(self, None)
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        self.rules.waiting.pop(self, None)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def timed_h11_protocol(
    header_timeout_s: float = HEADER_TIMEOUT_S,
    *,
    max_head_bytes: int,
    max_connections: int | None = None,
    https: bool = False,
) -> type[H11Protocol]:
    """The protocol class to give `uvicorn.Config(http=…)`: one per server, as its
    connections share the cap."""
    server_rules = ConnectionRules(header_timeout_s, max_head_bytes, max_connections, https)

    class ServerProtocol(TimedH11Protocol):
        rules = server_rules

    return ServerProtocol
