"""The local runtime's HTTP server (uvicorn with `serve`'s settings) in the test's loop, on a
free port: real sockets, real HTTP/1.1 parsing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn

from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.server import server_config


@asynccontextmanager
async def local_server(asgi: AsgiApp) -> AsyncIterator[int]:
    """Serve `asgi` on 127.0.0.1; yields the port."""
    server = uvicorn.Server(server_config(asgi, 0))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task  # raises what stopped it
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield int(port)
    finally:
        server.should_exit = True
        await task
