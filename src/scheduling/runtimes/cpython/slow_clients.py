"""uvicorn's h11 protocol with two limits on a request's head: a deadline and a size.

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
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from scheduling.runtimes.cpython import h11_headers

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


def timed_h11_protocol(
    header_timeout_s: float = HEADER_TIMEOUT_S, *, max_head_bytes: int
) -> type[H11Protocol]:
    """The protocol class to give `uvicorn.Config(http=…)`."""

    class TimedH11Protocol(H11Protocol):
        _head_deadline: asyncio.TimerHandle | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.conn = HeadLimitedConnection(max_head_bytes)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._expect_head()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is in
                self._cancel_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._expect_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_deadline()
            super().connection_lost(exc)

        def _expect_head(self) -> None:
            self._cancel_deadline()
            self._head_deadline = self.loop.call_later(header_timeout_s, self._head_too_slow)

        def _cancel_deadline(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_too_slow(self) -> None:
            self._head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return TimedH11Protocol
