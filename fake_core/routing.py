"""The server's routes as a table: method and path to an endpoint, as starlette does.

A path matches exactly, or, for a prefix route, everything under it (the
protocol routes its own paths, for the in-process transport too). A known
path asked with another method is 405 with `Allow`; anything else is 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from fake_core.context import Context
from fake_core.wire import Reply, error


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # path and query, as received
    path: str
    query: dict[str, str]
    headers: Mapping[str, str]  # names as the client spelt them
    body: bytes


Endpoint = Callable[[Context, Request], Awaitable[Reply]]


@dataclass(frozen=True)
class Route:
    method: str  # ignored by a prefix route
    path: str
    endpoint: Endpoint
    prefix: bool = False

    def covers(self, path: str) -> bool:
        return path.startswith(self.path) if self.prefix else path == self.path


def find(routes: Iterable[Route], method: str, path: str) -> Endpoint | Reply:
    """The endpoint for this request, or the 404/405 reply."""
    allowed: list[str] = []
    for route in routes:
        if not route.covers(path):
            continue
        if route.prefix or route.method == method:
            return route.endpoint
        allowed.append(route.method)
    if not allowed:
        return error(404, "not_found")
    refused = error(405, "method_not_allowed")
    refused.headers["allow"] = ", ".join(allowed)
    return refused
