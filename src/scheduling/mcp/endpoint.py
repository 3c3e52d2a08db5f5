"""`POST /mcp`: JSON-RPC 2.0 answered in JSON, never a stream. Who asks (an agent key),
whether they may now (origin, body, calls a minute), which revision, and the answer. A refusal
is a JSON-RPC error with the HTTP status the transport asks for; a tool's own refusal is a tool
error in the pages' words. Neither the key nor a proposal's note is logged.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from scheduling import safe_json
from scheduling.actions.access import limited
from scheduling.actions.agents import TimeRefused, key_for
from scheduling.domain.secrets import bearer_token
from scheduling.domain.times import Retry
from scheduling.domain.wording import Refusal
from scheduling.failure_throttle import client_key
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.limits import CallLimit, retry_after_seconds
from scheduling.mcp.tools import TOOLS
from scheduling.repository.agents import count_agent_call
from scheduling.repository.installations import AgentKey
from scheduling.services import Services, log

# -- JSON-RPC and the revisions --------------------------------------------------------------------

STATELESS_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
# A request without `MCP-Protocol-Version` after the handshake is read as this (the spec's rule).
ASSUMED_VERSION = "2025-03-26"
SUPPORTED_VERSIONS = (*STATELESS_VERSIONS, *HANDSHAKE_VERSIONS)

META_VERSION = "io.modelcontextprotocol/protocolVersion"
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

# JSON-RPC's codes and the protocol's own, each with its words (`error.data.code`), as the
# pages' refusals have them.
PARSE_ERROR = (-32700, "invalid_json")
INVALID_REQUEST = (-32600, "invalid_request")
METHOD_NOT_FOUND = (-32601, "unknown_method")
INVALID_PARAMS = (-32602, "invalid_params")
NOT_AUTHORIZED = (-32001, "unauthorized")
HEADER_MISMATCH = (-32020, "header_mismatch")
UNSUPPORTED_VERSION = (-32022, "unsupported_protocol_version")

SERVER_INFO = {"name": "scheduling", "title": "Scheduling for Dee Wan", "version": "0.1.0"}
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
INSTRUCTIONS = (
    "Scheduling publishes and unpublishes Dee Wan content at a time. Read with list_schedules,"
    " get_schedule and agenda; propose with propose_schedule. A proposal becomes a schedule"
    " only when a person confirms it on their page: an agent never publishes or pins."
)


class ProtocolError(Exception):
    """A message this endpoint cannot take: a JSON-RPC error, the HTTP status it goes with, and
    its code in words (`reason`, the JSON-RPC code's own unless given)."""

    def __init__(
        self,
        error: tuple[int, str],
        message: str,
        *,
        status: int = 400,
        data: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code, own_reason = error
        self.message = message
        self.status = status
        self.data = {"code": reason or own_reason, **(data or {})}


@dataclass(frozen=True)
class Message:
    method: str
    id: str | int | None  # None: a notification
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}


def message(body: bytes) -> Message:
    """One JSON-RPC request or notification; a batch or anything else is refused."""
    try:
        data = safe_json.loads(body, max_bytes=MAX_BODY_BYTES, max_depth=MAX_DEPTH)
    except safe_json.UnsafeJson:
        raise ProtocolError(
            PARSE_ERROR, f"The body is not JSON of at most {MAX_DEPTH} levels."
        ) from None
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


def error(ident: str | int | None, problem: ProtocolError) -> dict[str, Any]:
    body = {"code": problem.code, "message": problem.message, "data": problem.data}
    return {"jsonrpc": "2.0", "id": ident, "error": body}


def unsupported(version: str) -> ProtocolError:
    return ProtocolError(
        UNSUPPORTED_VERSION,
        f"This server does not speak MCP revision {version[:20]!r}.",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": version[:64]},
    )


# -- the endpoint ----------------------------------------------------------------------------------

MAX_BODY_BYTES = 16 * 1024  # a tool call is a few hundred bytes
MAX_DEPTH = 8  # `params.arguments` and one level in them is all a call needs
CALLS = CallLimit(per_minute=60)  # a key's requests a minute
AUTHENTICATE = ("www-authenticate", 'Bearer realm="scheduling-mcp"')


async def mcp(request: Request, services: Services) -> Response:
    ident: str | int | None = None
    try:
        _check_origin(request, services)
        if len(request.body) > MAX_BODY_BYTES:
            raise ProtocolError(
                INVALID_REQUEST,
                f"The body is over {MAX_BODY_BYTES} bytes.",
                status=413,
                reason="body_too_large",
            )
        key = await _key(request, services)
        if key is None:
            raise ProtocolError(
                NOT_AUTHORIZED,
                "This needs a live agent key (Authorization: Bearer dwk_…): it is missing,"
                " expired or revoked, or its person has not opened Scheduling from Dee Wan"
                " where it was minted in the last day (a key works only while they do)."
                " A person mints keys on their Scheduling page.",
                status=401,
            )
        async with limited(services, [(f"agent:{key.id}", CALLS)], _too_many):
            found = message(request.body)
            ident = found.id
            answer = await _answer(request, services, key, found)
    except ProtocolError as problem:
        response = json_response(error(ident, problem), problem.status)
        if problem.status == 401:
            response.headers.append(AUTHENTICATE)
        return response
    except Refusal as refusal:  # the key's calls a minute
        limit = ProtocolError(
            INVALID_REQUEST, refusal.message, status=refusal.status, reason=refusal.code
        )
        response = json_response(error(ident, limit), refusal.status)
        response.headers.extend(refusal.headers)
        return response
    if answer is None:  # a notification: accepted, nothing to say
        return Response(202)
    return json_response({"jsonrpc": "2.0", "id": ident, "result": answer})


async def _key(request: Request, services: Services) -> AgentKey | None:
    """The live key the request carries. A client that sent too many wrong keys lately is
    held back (429), its key not even looked up, as wrong operator secrets are."""
    throttle, counted = services.failure_throttle, f"agent:{client_key(request.client)}"
    wait_s = throttle.retry_after_s(counted)
    if wait_s is not None:
        raise Refusal.too_many(
            "too_many_attempts",
            "Too many wrong agent keys came from your address in the last minute.",
            wait_s,
            title="Too many attempts",
        )
    key = await key_for(services, bearer_token(request.headers.get("authorization")))
    if key is None and "authorization" in request.headers:
        await throttle.failed(counted)
    return key


def _too_many(wait_ms: int) -> Refusal:
    return Refusal.too_many(
        "too_many_agent_calls",
        f"An agent key makes at most {CALLS.per_minute} requests a minute.",
        retry_after_seconds(wait_ms),
        title="Too many requests",
    )


def _check_origin(request: Request, services: Services) -> None:
    """A browser page of another site must not reach the endpoint (DNS rebinding): an Origin,
    when sent, is the plugin's own."""
    origin = request.headers.get("origin")
    if origin is not None and origin != services.config.public_origin:
        raise ProtocolError(
            INVALID_REQUEST,
            "Requests from this origin are not accepted.",
            status=403,
            reason="cross_site_request",
        )


async def _answer(
    request: Request, services: Services, key: AgentKey, found: Message
) -> dict[str, Any] | None:
    if found.id is None:  # a notification, of either revision: accepted, nothing to say
        return None
    if META_VERSION in found.meta:
        _check_stateless(request, found)
        answer = await _method(services, key, found, STATELESS_METHODS)
        meta = {**answer.get("_meta", {}), META_SERVER: SERVER_INFO}
        hints = CACHE if found.method in CACHE_HINTS else {}
        return {**answer, **hints, "resultType": "complete", "_meta": meta}
    if found.method == "initialize":
        return _initialize(found)
    version = request.headers.get("mcp-protocol-version", ASSUMED_VERSION)
    if version not in HANDSHAKE_VERSIONS:
        raise unsupported(version)
    return await _method(services, key, found, HANDSHAKE_METHODS)


def _check_stateless(request: Request, found: Message) -> None:
    """The stateless revision's rules, in its order: the client's capabilities in `_meta`,
    the headers saying what the body says, then a revision this server speaks."""
    if not isinstance(found.meta.get(META_CAPABILITIES), dict):
        raise ProtocolError(INVALID_PARAMS, "_meta lacks the client's capabilities.")
    said = {"mcp-protocol-version": found.meta[META_VERSION], "mcp-method": found.method}
    if found.method == "tools/call" and found.params.get("name") is not None:
        said["mcp-name"] = found.params["name"]
    for header, body in said.items():
        sent = request.headers.get(header)
        if sent is None or sent != body:
            raise ProtocolError(HEADER_MISMATCH, f"The {header} header differs from the body.")
    version = said["mcp-protocol-version"]
    if version not in STATELESS_VERSIONS:
        raise unsupported(version)


def _initialize(found: Message) -> dict[str, Any]:
    asked = found.params.get("protocolVersion")
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


async def _method(
    services: Services, key: AgentKey, found: Message, methods: frozenset[str]
) -> dict[str, Any]:
    if found.method not in methods:
        raise ProtocolError(METHOD_NOT_FOUND, "This server has no such method.", status=404)
    if found.method == "server/discover":
        return {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": CAPABILITIES,
            "instructions": INSTRUCTIONS,
        }
    if found.method == "tools/list":
        return {"tools": _listed()}
    if found.method == "tools/call":
        return await _call(services, key, found.params)
    return {}  # ping


@functools.cache
def _listed() -> list[dict[str, Any]]:
    """The tools as `tools/list` gives them, their schemas built once (about 9 ms each time
    otherwise: pydantic writes each model's JSON Schema anew)."""
    return [tool.listed() for tool in TOOLS.values()]


async def _call(services: Services, key: AgentKey, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:
        raise ProtocolError(
            INVALID_PARAMS, f"There is no tool of that name; there are {', '.join(TOOLS)}."
        )
    arguments = params.get("arguments") or {}
    try:
        asked = tool.arguments.model_validate(arguments)
        answer = await tool.call(services, key, asked)
    except ValidationError as invalid:
        await count_agent_call(services.db, tool.name, "invalid")
        return _tool_error("invalid_arguments", _invalid_words(invalid))
    except Refusal as refusal:
        await count_agent_call(services.db, tool.name, "refused")
        retries = refusal.retries if isinstance(refusal, TimeRefused) else ()
        return _tool_error(refusal.code, refusal.message, retries)
    await count_agent_call(services.db, tool.name, "ok")
    structured = answer.model_dump(mode="json")
    log.info("installation %s: agent key %s called %s", key.installation_id, key.id, tool.name)
    return {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "structuredContent": structured,
        "isError": False,
    }


def _tool_error(code: str, message: str, retries: tuple[Retry, ...] = ()) -> dict[str, Any]:
    text = f"{message} (code: {code})"
    if retries:
        text += " Instead: " + "; ".join(f"{r.field} {r.value} ({r.label})" for r in retries)
    return {
        "content": [{"type": "text", "text": text}],
        "isError": True,
        "_meta": {"code": code, "suggestions": [dataclasses.asdict(r) for r in retries]},
    }


def _invalid_words(invalid: ValidationError) -> str:
    """Which arguments are wrong and how, without echoing what was sent."""
    parts = []
    for problem in invalid.errors(include_input=False, include_url=False)[:5]:
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        parts.append(f"{where}: {problem['msg']}")
    return "These arguments are not what the tool takes: " + "; ".join(parts) + "."
