"""A small asyncio HTTP/1.1 server (h11) we control at the socket level.

Owning the socket lets `apply_then_drop` close the connection with no answer
at all and `timeout` hold it open without a byte, as a real broken core would.
"""

from __future__ import annotations

import asyncio
import contextlib
from http import HTTPStatus

import h11

from fake_core.app import FakeCoreApp
from fake_core.wire import Reply, error

MAX_BODY = 1 << 20


async def serve(app: FakeCoreApp, host: str = "127.0.0.1", port: int = 0) -> asyncio.Server:
    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _connection(app, reader, writer)
        except asyncio.CancelledError:
            # The server is stopping (Ctrl-C) while a client keeps its connection open: the
            # connection ends with it. Python 3.11's stream callback would log a cancelled
            # task as an "Exception in callback" traceback; ending normally says nothing.
            return

    return await asyncio.start_server(on_connection, host, port)


def bound_port(server: asyncio.Server) -> int:
    port = server.sockets[0].getsockname()[1]
    assert isinstance(port, int)
    return port


async def _connection(
    app: FakeCoreApp, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            request = await _read_request(conn, reader)
            if request is None:
                return
            method, target, headers, body = request
            if len(body) > MAX_BODY:
                reply = error(413, "payload_too_large")
            else:
                reply = await app.dispatch(method, target, headers, body)
            if reply.action == "drop":
                writer.transport.abort()  # processed, but the client never hears back
                return
            if reply.action == "stall":
                await _stall(reader, app.stall_s)
                writer.transport.abort()
                return
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            await _write(conn, writer, reply)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except h11.RemoteProtocolError:
        # h11 refuses to answer when the request was beyond reply; the client may be gone.
        with contextlib.suppress(h11.LocalProtocolError, ConnectionError):
            await _write(conn, writer, error(400, "bad_http"))
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client went away: there is no one to answer
    finally:
        writer.close()
        with contextlib.suppress(OSError):  # closing a socket the peer already reset
            await writer.wait_closed()


async def _read_request(
    conn: h11.Connection, reader: asyncio.StreamReader
) -> tuple[str, str, dict[str, str], bytes] | None:
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_BODY:
                break
        elif isinstance(event, h11.EndOfMessage):
            break
        else:  # ConnectionClosed, or PAUSED between requests
            return None
    assert request is not None
    # raw_items keeps the header names as the client spelt them (for the call record).
    headers = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in request.headers.raw_items()
    }
    return request.method.decode(), request.target.decode("latin-1"), headers, bytes(body)


async def _write(conn: h11.Connection, writer: asyncio.StreamWriter, reply: Reply) -> None:
    headers = [(name, value) for name, value in reply.headers.items()]
    headers.append(("content-length", str(len(reply.body))))
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:  # a fault may use any status
        reason = ""
    response = h11.Response(status_code=reply.status, headers=headers, reason=reason)
    data = conn.send(response) or b""
    data += conn.send(h11.Data(data=reply.body)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    writer.write(data)
    await writer.drain()


async def _stall(reader: asyncio.StreamReader, limit_s: float) -> None:
    """Say nothing until the client gives up (closes) or `limit_s` passes."""
    with contextlib.suppress(TimeoutError, ConnectionError):
        async with asyncio.timeout(limit_s):
            while await reader.read(65536):
                pass
