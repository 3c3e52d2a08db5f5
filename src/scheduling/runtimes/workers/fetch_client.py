"""Outbound HTTP port over the runtime's `fetch`: no redirects followed, a hard timeout; the
subrequest limit is `LimitReached`, not a transport failure."""

from __future__ import annotations

from typing import Any

import js
from pyodide.ffi import JsException, to_js

from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout
from scheduling.runtimes.workers.platform_limits import limit_of
from scheduling.runtimes.workers.streams import read_at_most


class WorkersFetch:
    async def send(self, request: OutboundRequest) -> OutboundResponse:
        init: dict[str, Any] = {
            "method": request.method,
            "headers": to_js(dict(request.headers), dict_converter=js.Object.fromEntries),
            # A 3xx is an answer to classify, never something to follow.
            "redirect": "manual",
            # Aborts the whole exchange, body included. The caller admits the request to
            # one of the invocation's connections first, so this never times its wait.
            "signal": js.AbortSignal.timeout(int(request.timeout_s * 1000)),
        }
        if request.body is not None:
            init["body"] = request.body.decode("utf-8")
        try:
            response = await js.fetch(
                request.url, to_js(init, dict_converter=js.Object.fromEntries)
            )
            body, truncated = await read_at_most(response.body, request.max_body_bytes)
        except JsException as exc:
            if getattr(exc, "name", "") in ("TimeoutError", "AbortError"):
                raise TransportTimeout(exc.name) from None
            limit = limit_of(str(exc))
            if limit is not None:  # refused before anything was sent
                raise limit from None
            raise TransportError(getattr(exc, "name", "fetch failed")) from None
        except Exception as exc:
            raise TransportError(type(exc).__name__) from None
        headers = {str(name).lower(): str(value) for name, value in response.headers.entries()}
        return OutboundResponse(int(response.status), headers, body, truncated)
