"""A route table as data: method + path pattern → handler."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .requests import Request
from .responses import Response, error_response

Handler = Callable[[Request, Any], Awaitable[Response]]

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    method: str
    pattern: str
    handler: Handler

    def compile(self) -> re.Pattern[str]:
        parts, pos = [], 0
        for param in _PARAM.finditer(self.pattern):
            parts.append(re.escape(self.pattern[pos : param.start()]))
            parts.append(f"(?P<{param.group(1)}>[^/]+)")
            pos = param.end()
        parts.append(re.escape(self.pattern[pos:]))
        return re.compile("^" + "".join(parts) + "$")


class Router:
    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = [(route, route.compile()) for route in routes]

    def match(self, request: Request) -> tuple[Handler | None, dict[str, str], bool]:
        """(handler, params, path_matched). path_matched without a handler means 405."""
        path_matched = False
        for route, regex in self._routes:
            found = regex.match(request.path)
            if not found:
                continue
            path_matched = True
            if route.method == request.method or (
                route.method == "GET" and request.method == "HEAD"
            ):
                return route.handler, found.groupdict(), True
        return None, {}, path_matched

    async def dispatch(self, request: Request, services: Any) -> Response:
        handler, params, path_matched = self.match(request)
        if handler is None:
            if path_matched:
                return error_response(405, "method_not_allowed")
            return error_response(404, "not_found")
        request.path_params = params
        return await handler(request, services)
