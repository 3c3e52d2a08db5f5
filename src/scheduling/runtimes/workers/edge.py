"""A request at the Worker's edge: converted for the HTTP app, answered by it, converted back.

The entry's top level imports it with the route table, the handlers, the pages and jinja2,
so they are in the memory snapshot and an isolate's first request imports nothing."""

from __future__ import annotations

from typing import Any

from scheduling.app import App
from scheduling.http.requests import MAX_BODY_BYTES, Headers, Request, ascii_int
from scheduling.http.responses import Response
from scheduling.runtimes.workers.streams import read_at_most
from scheduling.services import Services


def build_app(services: Services) -> App:
    return App(services)


async def to_core_request(request: Any) -> Request:
    """The core's request. `request.url` keeps the path as sent (`%2F` stays encoded)."""
    # The JS request's own method: the SDK's `request.method` looks it up in an enum and
    # raises KeyError for one it has no name for (PROPFIND, PURGE, QUERY), which would answer
    # 500 where the router answers 405 with `Allow`.
    method = str(request.js_object.method)
    headers = Headers([(str(k), str(v)) for k, v in request.headers.items()])
    if method in ("GET", "HEAD"):
        body = b""
    elif _declared_length(headers) > MAX_BODY_BYTES:
        # Not read into the isolate's memory: a body one byte over the cap stands for it,
        # and the app refuses it as it refuses any body over the cap.
        body = bytes(MAX_BODY_BYTES + 1)
    else:
        # With no Content-Length (chunked) the size is known only by reading: one byte past
        # the cap is enough to refuse, and the rest is never read (nor waited for).
        body, _ = await read_at_most(request.body, MAX_BODY_BYTES + 1)
    # Cloudflare's edge sets CF-Connecting-IP to the connecting client's address, replacing
    # any a client sent; it is the only client identity a Worker has.
    client = headers.get("cf-connecting-ip") or None
    return Request(method, str(request.url), headers, body, client=client)


def _declared_length(headers: Headers) -> int:
    return ascii_int(headers.get("content-length")) or 0


def to_workers_response(response: Response) -> Any:
    from workers import Response as WorkersResponse

    return WorkersResponse(
        response.body if response.body else None,
        status=response.status,
        headers=list(response.headers),
    )
