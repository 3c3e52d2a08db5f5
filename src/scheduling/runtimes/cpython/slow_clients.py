"""uvicorn's h11 protocol with a deadline for a request's head.

uvicorn times out an idle keep-alive connection but not one that sends its
headers a byte at a time (slowloris): such a connection stays open for as
long as the client likes. Here every request head, the first on a connection
and each later one, must be complete within `header_timeout_s`, or the
connection is closed. The body's deadline is the ASGI adapter's
(`asgi.BODY_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0


def timed_h11_protocol(header_timeout_s: float = HEADER_TIMEOUT_S) -> type[H11Protocol]:
    """The protocol class to give `uvicorn.Config(http=…)`."""

    class TimedH11Protocol(H11Protocol):
        _head_deadline: asyncio.TimerHandle | None = None

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
