"""A route table as data: method + path pattern → handler."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scheduling.domain.refusals import Refusal
from scheduling.http.requests import Request
from scheduling.http.responses import Response

Handler = Callable[[Request, Any], Awaitable[Response]]

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """A method and a path pattern, and the handler that answers them."""

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

    def methods(self) -> tuple[str, ...]:
        """A GET route answers HEAD too, without a body."""
        return (self.method, "HEAD") if self.method == "GET" else (self.method,)


class Router:
    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = [(route, route.compile()) for route in routes]

    def match(self, request: Request) -> tuple[Handler | None, dict[str, str], tuple[str, ...]]:
        """(handler, params, allowed methods). No handler with some methods allowed means 405."""
        allowed: list[str] = []
        for route, regex in self._routes:
            found = regex.match(request.path)
            if not found:
                continue
            if request.method in route.methods():
                return route.handler, found.groupdict(), route.methods()
            allowed.extend(m for m in route.methods() if m not in allowed)
        return None, {}, tuple(allowed)

    async def dispatch(self, request: Request, services: Any) -> Response:
        handler, params, allowed = self.match(request)
        if handler is None:
            if allowed:
                raise Refusal(
                    405,
                    "method_not_allowed",
                    f"This address takes {' or '.join(allowed)} only.",
                    headers=[("allow", ", ".join(allowed))],
                )
            raise Refusal(404, "not_found", "There is nothing at this address.")
        request.path_params = params
        return await handler(request, services)
