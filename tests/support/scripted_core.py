"""Dee Wan answers chosen by a test: a handler of the plugin's outbound port, answering the
launch exchange and the content read from a script and everything else from the fake core
behind it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from fake_core.transport import Handler, answered
from scheduling.ports import OutboundRequest, OutboundResponse

JSON = {"content-type": "application/json"}


class ScriptedCore:
    def __init__(self, inner: Handler) -> None:
        self.inner = inner
        self.exchange: OutboundResponse | None = None
        self.content: OutboundResponse | None = None

    async def __call__(self, request: OutboundRequest) -> OutboundResponse:
        path = urlsplit(request.url).path
        if path.endswith("/launch/exchange") and self.exchange is not None:
            return self.exchange
        if "/content/" in path and self.content is not None:
            return self.content
        return await answered(self.inner, request)


def answer(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> OutboundResponse:
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    return OutboundResponse(status, headers if headers is not None else JSON, body)


def exchange_answer(installation_id: str, **changes: Any) -> dict[str, Any]:
    """A launch exchange answer as protocol §4 shapes it, for a content launch."""
    data: dict[str, Any] = {
        "code": "launch_exchanged",
        "installation_id": installation_id,
        "person": {"id": "usr_editor", "name": "Ada Lovelace"},
        "context": {"kind": "content", "content_id": "cnt_en"},
        "delegation": {"token": "dwd_" + "d" * 43, "expires_at": "2026-07-01T10:30:00Z"},
    }
    data.update(changes)
    return data


def content_answer(**changes: Any) -> dict[str, Any]:
    """A content read answer as protocol §5 shapes it."""
    data: dict[str, Any] = {
        "code": "content",
        "content": {
            "id": "cnt_en",
            "primary_id": "cnt_en",
            "title": "Spring launch",
            "model": "article",
            "locale": "en",
            "current_version_id": "ver_2",
            "published_version_id": "ver_1",
        },
        "workflow": {
            "revision": 7,
            "transitions": [
                {"kind": "publish", "to": "published"},
                {"kind": "unpublish", "to": "draft"},
            ],
        },
        "site": {"timezone": "Europe/Paris"},
    }
    data.update(changes)
    return data
