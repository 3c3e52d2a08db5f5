"""Reading a body stream (a request's or a response's) only up to a limit."""

from __future__ import annotations

from typing import Any

from pyodide.ffi import jsnull


async def read_at_most(stream: Any, limit: int) -> tuple[bytes, bool]:
    """(at most `limit` bytes of the JS ReadableStream `stream`, whether there was more).

    Read chunk by chunk; once past `limit` the rest is cancelled unread, so a body that is
    huge or never ends is neither held in the isolate's memory nor waited for.
    """
    if stream is None or stream is jsnull:  # no body (a 204, say): JS null
        return b"", False
    reader = stream.getReader()
    body = bytearray()
    while True:
        chunk = await reader.read()
        if chunk.done:
            return bytes(body), False
        body += chunk.value.to_bytes()
        if len(body) > limit:
            await reader.cancel()
            return bytes(body[:limit]), True
