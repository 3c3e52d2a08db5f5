"""The Model Context Protocol as this endpoint speaks it: JSON-RPC 2.0 messages, the revisions
it accepts, and the answers it gives (JSON, never a stream), each in its revision's shape.

Two revisions: the stateless 2026-07-28 (no handshake; every request carries its version and
the client's capabilities in `params._meta`, its method in `Mcp-Method` and a tool's name in
`Mcp-Name`; every result says its `resultType` and the server in `_meta`, and the cacheable
ones how long they keep) and 2025-11-25, which clients still send (`initialize`, then
`notifications/initialized`, then `MCP-Protocol-Version` on each request), with the older
revisions a 2025-11-25 client may negotiate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATELESS = "2026-07-28"
STATELESS_VERSIONS = (STATELESS,)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
# A request without `MCP-Protocol-Version` after the handshake is read as this (the spec's rule).
ASSUMED_VERSION = "2025-03-26"
SUPPORTED_VERSIONS = (*STATELESS_VERSIONS, *HANDSHAKE_VERSIONS)

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"

# The methods each revision has (2026-07-28 has no `initialize` or `ping`, the handshake's
# revisions no `server/discover`); a notification is accepted and left unanswered.
STATELESS_METHODS = frozenset({"server/discover", "tools/list", "tools/call"})
HANDSHAKE_METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call"})
# How long a client may keep the stateless revision's cacheable answers: within one key only,
# as they are answered only to a key, and a few minutes, so a deploy's new tools reach it soon.
CACHE_HINTS = frozenset({"server/discover", "tools/list"})
CACHE = {"ttlMs": 300_000, "cacheScope": "private"}

# JSON-RPC's codes, and the protocol's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
NOT_AUTHORIZED = -32001
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022

SERVER_INFO = {"name": "scheduling", "title": "Scheduling for Dee Wan", "version": "0.1.0"}
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
INSTRUCTIONS = (
    "Scheduling publishes and unpublishes Dee Wan content at a time. Read with list_schedules,"
    " get_schedule and agenda; propose with propose_schedule. A proposal becomes a schedule"
    " only when a person confirms it on their page: an agent never publishes or pins."
)


# Each error's code in words, as the pages' refusals have one (`error.data.code`).
REASONS = {
    PARSE_ERROR: "invalid_json",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "unknown_method",
    INVALID_PARAMS: "invalid_params",
    HEADER_MISMATCH: "header_mismatch",
    UNSUPPORTED_VERSION: "unsupported_protocol_version",
    NOT_AUTHORIZED: "unauthorized",
}


class ProtocolError(Exception):
    """A message this endpoint cannot take: a JSON-RPC error, the HTTP status it goes with, and
    its code in words (`reason`, the JSON-RPC code's own unless given)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        status: int = 400,
        data: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = {"code": reason or REASONS[code], **(data or {})}


@dataclass(frozen=True)
class Message:
    method: str
    id: str | int | None  # None: a notification
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}


def message(data: object) -> Message:
    """One JSON-RPC request or notification; a batch or anything else is refused."""
    if isinstance(data, list):
        raise ProtocolError(INVALID_REQUEST, "Send one JSON-RPC message per request, not a batch.")
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, "This is not a JSON-RPC 2.0 message.")
    method, params = data.get("method"), data.get("params", {})
    ident = data.get("id")
    if "id" in data and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        raise ProtocolError(INVALID_REQUEST, "A request's id is a string or a number.")
    if not isinstance(method, str) or not isinstance(params, dict):
        raise ProtocolError(INVALID_REQUEST, "A request names its method and sends its params.")
    return Message(method, ident, params)


def result(ident: str | int | None, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": value}


def error(ident: str | int | None, problem: ProtocolError) -> dict[str, Any]:
    body = {"code": problem.code, "message": problem.message, "data": problem.data}
    return {"jsonrpc": "2.0", "id": ident, "error": body}


def complete(method: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A result as the stateless revision has it."""
    meta = {**answer.get("_meta", {}), META_SERVER: SERVER_INFO}
    hints = CACHE if method in CACHE_HINTS else {}
    return {**answer, **hints, "resultType": "complete", "_meta": meta}


def unsupported(version: str) -> ProtocolError:
    return ProtocolError(
        UNSUPPORTED_VERSION,
        f"This server does not speak MCP revision {version[:20]!r}.",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": version[:64]},
    )
