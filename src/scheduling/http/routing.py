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
# A refused request's page shown again (a form with what was entered and why), or None when
# the refusal is not one its page shows: `App.handle` calls it with what the handler raised.
Again = Callable[[Request, Any, Refusal], Awaitable[Response | None]]

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """A method and a path pattern, the handler that answers them and, for a form, how its
    page is shown again when it is refused (`again`)."""

    method: str
    pattern: str
    handler: Handler
    again: Again | None = None

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

    def match(self, request: Request) -> tuple[Route | None, dict[str, str], tuple[str, ...]]:
        """(route, params, allowed methods). No route with some methods allowed means 405."""
        allowed: list[str] = []
        for route, regex in self._routes:
            found = regex.match(request.path)
            if not found:
                continue
            if request.method in route.methods():
                return route, found.groupdict(), route.methods()
            allowed.extend(m for m in route.methods() if m not in allowed)
        return None, {}, tuple(allowed)

    def route(self, request: Request) -> Route:
        """The route that answers `request`, its path's parameters set on it; refused 404 or
        405 when there is none."""
        route, params, allowed = self.match(request)
        if route is None:
            if allowed:
                raise Refusal(
                    405,
                    "method_not_allowed",
                    f"This address takes {' or '.join(allowed)} only.",
                    headers=[("allow", ", ".join(allowed))],
                )
            raise Refusal(404, "not_found", "There is nothing at this address.")
        request.path_params = params
        return route
