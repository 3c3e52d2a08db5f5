"""`POST /mcp`: who asks (an agent key), whether they may now (its origin, its body, its calls
a minute), which revision they speak, and the answer, in JSON.

Every refusal is a JSON-RPC error with the HTTP status the transport asks for: 401 for a key
that is missing, unknown, expired or revoked (at once: each request looks the key up), 403
for a foreign Origin, 413 for a body past the limit, 429 past the key's calls a minute, 400
for what is not a message of ours. A tool's own refusal is a tool error (`isError`) in the
words and with the code the pages use. Neither the key nor a proposal's note is logged.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import ValidationError

from scheduling import safe_json
from scheduling.actions.agent_access import key_for
from scheduling.actions.agents_propose import TimeRefused
from scheduling.actions.throttled import limited
from scheduling.domain.call_limits import CallLimit, seconds
from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import bearer_token
from scheduling.failure_throttle import client_key
from scheduling.http.requests import Request
from scheduling.http.responses import Response, json_response
from scheduling.mcp import protocol
from scheduling.mcp.protocol import Message, ProtocolError
from scheduling.mcp.tools import TOOLS
from scheduling.repository import agent_calls
from scheduling.repository.agent_keys import AgentKey
from scheduling.services import Services, log

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
                protocol.INVALID_REQUEST,
                f"The body is over {MAX_BODY_BYTES} bytes.",
                status=413,
                reason="body_too_large",
            )
        key = await _key(request, services)
        if key is None:
            raise ProtocolError(
                protocol.NOT_AUTHORIZED,
                "This needs a live agent key (Authorization: Bearer dwk_…): it is missing,"
                " expired or revoked, or its person has not opened Scheduling from Dee Wan"
                " where it was minted in the last day (a key works only while they do)."
                " A person mints keys on their Scheduling page.",
                status=401,
            )
        async with limited(services, [(f"agent:{key.id}", CALLS)], _too_many):
            found = _parse(request.body)
            ident = found.id
            answer = await _answer(request, services, key, found)
    except ProtocolError as problem:
        response = json_response(protocol.error(ident, problem), problem.status)
        if problem.status == 401:
            response.headers.append(AUTHENTICATE)
        return response
    except Refusal as refusal:  # the key's calls a minute
        limit = ProtocolError(
            protocol.INVALID_REQUEST, refusal.message, status=refusal.status, reason=refusal.code
        )
        response = json_response(protocol.error(ident, limit), refusal.status)
        response.headers.extend(refusal.headers)
        return response
    if answer is None:  # a notification: accepted, nothing to say
        return Response(202)
    return json_response(protocol.result(ident, answer))


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
        seconds(wait_ms),
        title="Too many requests",
    )


def _check_origin(request: Request, services: Services) -> None:
    """A browser page of another site must not reach the endpoint (DNS rebinding): an Origin,
    when sent, is the plugin's own."""
    origin = request.headers.get("origin")
    if origin is not None and origin != services.config.public_origin:
        raise ProtocolError(
            protocol.INVALID_REQUEST,
            "Requests from this origin are not accepted.",
            status=403,
            reason="cross_site_request",
        )


def _parse(body: bytes) -> Message:
    try:
        data = safe_json.loads(body, max_bytes=MAX_BODY_BYTES, max_depth=MAX_DEPTH)
    except safe_json.UnsafeJson:
        raise ProtocolError(
            protocol.PARSE_ERROR, f"The body is not JSON of at most {MAX_DEPTH} levels."
        ) from None
    return protocol.message(data)


async def _answer(
    request: Request, services: Services, key: AgentKey, found: Message
) -> dict[str, Any] | None:
    if found.id is None:  # a notification, of either revision: accepted, nothing to say
        return None
    if protocol.META_VERSION in found.meta:
        _check_stateless(request, found)
        answer = await _method(services, key, found, protocol.STATELESS_METHODS)
        return protocol.complete(found.method, answer)
    if found.method == "initialize":
        return _initialize(found)
    _check_handshake_version(request)
    return await _method(services, key, found, protocol.HANDSHAKE_METHODS)


def _check_stateless(request: Request, found: Message) -> None:
    """The stateless revision's rules, in its order: the client's capabilities in `_meta`,
    the headers saying what the body says, then a revision this server speaks."""
    if not isinstance(found.meta.get(protocol.META_CAPABILITIES), dict):
        raise ProtocolError(protocol.INVALID_PARAMS, "_meta lacks the client's capabilities.")
    said = {"mcp-protocol-version": found.meta[protocol.META_VERSION], "mcp-method": found.method}
    if found.method == "tools/call" and found.params.get("name") is not None:
        said["mcp-name"] = found.params["name"]
    for header, body in said.items():
        sent = request.headers.get(header)
        if sent is None or sent != body:
            raise ProtocolError(
                protocol.HEADER_MISMATCH, f"The {header} header differs from the body."
            )
    version = said["mcp-protocol-version"]
    if version not in protocol.STATELESS_VERSIONS:
        raise protocol.unsupported(version)


def _check_handshake_version(request: Request) -> None:
    version = request.headers.get("mcp-protocol-version", protocol.ASSUMED_VERSION)
    if version not in protocol.HANDSHAKE_VERSIONS:
        raise protocol.unsupported(version)


def _initialize(found: Message) -> dict[str, Any]:
    asked = found.params.get("protocolVersion")
    version = asked if asked in protocol.HANDSHAKE_VERSIONS else protocol.HANDSHAKE_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": protocol.CAPABILITIES,
        "serverInfo": protocol.SERVER_INFO,
        "instructions": protocol.INSTRUCTIONS,
    }


async def _method(
    services: Services, key: AgentKey, found: Message, methods: frozenset[str]
) -> dict[str, Any]:
    if found.method not in methods:
        raise ProtocolError(
            protocol.METHOD_NOT_FOUND, "This server has no such method.", status=404
        )
    if found.method == "server/discover":
        return {
            "supportedVersions": list(protocol.SUPPORTED_VERSIONS),
            "capabilities": protocol.CAPABILITIES,
            "instructions": protocol.INSTRUCTIONS,
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
            protocol.INVALID_PARAMS, f"There is no tool of that name; there are {', '.join(TOOLS)}."
        )
    arguments = params.get("arguments") or {}
    try:
        asked = tool.arguments.model_validate(arguments)
        answer = await tool.call(services, key, asked)
    except ValidationError as invalid:
        await agent_calls.count(services.db, tool.name, "invalid")
        return _tool_error("invalid_arguments", _invalid_words(invalid))
    except Refusal as refusal:
        await agent_calls.count(services.db, tool.name, "refused")
        return _tool_error(refusal.code, refusal.message, _suggestions(refusal))
    await agent_calls.count(services.db, tool.name, "ok")
    structured = answer.model_dump(mode="json")
    log.info("installation %s: agent key %s called %s", key.installation_id, key.id, tool.name)
    return {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "structuredContent": structured,
        "isError": False,
    }


def _suggestions(refusal: Refusal) -> list[dict[str, str]]:
    if not isinstance(refusal, TimeRefused):
        return []
    return [{"field": r.field, "value": r.value, "label": r.label} for r in refusal.retries]


def _tool_error(
    code: str, message: str, suggestions: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    text = f"{message} (code: {code})"
    if suggestions:
        text += " Instead: " + "; ".join(
            f"{s['field']} {s['value']} ({s['label']})" for s in suggestions
        )
    return {
        "content": [{"type": "text", "text": text}],
        "isError": True,
        "_meta": {"code": code, "suggestions": suggestions or []},
    }


def _invalid_words(invalid: ValidationError) -> str:
    """Which arguments are wrong and how, without echoing what was sent."""
    parts = []
    for problem in invalid.errors(include_input=False, include_url=False)[:5]:
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        parts.append(f"{where}: {problem['msg']}")
    return "These arguments are not what the tool takes: " + "; ".join(parts) + "."
