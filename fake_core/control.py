"""The control API under /__fake/: JSON endpoints that drive the fake core.

Meant for tests and tools run against `python -m fake_core`; it is not part
of protocol v1 and listens on 127.0.0.1 only. Its routes are the `ROUTES`
table at the end; each endpoint gets the body as a JSON object and the query.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fake_core import snapshot
from fake_core.clock import parse_rfc3339, rfc3339
from fake_core.context import Context
from fake_core.core import FakeCore
from fake_core.demo import seed_demo
from fake_core.faults import ENDPOINTS, Fault, RandomFaults
from fake_core.install import InstallError
from fake_core.routing import Endpoint, Request, Route
from fake_core.wire import Reply, json_reply

Handler = Callable[[Context, dict[str, Any], dict[str, str]], Awaitable[Reply]]


def _json_endpoint(handler: Handler) -> Endpoint:
    """A bad body, or a bad value in it, is 400 `invalid_request` with a message."""

    async def endpoint(ctx: Context, request: Request) -> Reply:
        try:
            data = json.loads(request.body) if request.body else {}
            if not isinstance(data, dict):
                raise ValueError("body must be a JSON object")
            return await handler(ctx, data, request.query)
        except (ValueError, KeyError, TypeError) as exc:
            return json_reply(400, {"code": "invalid_request", "message": str(exc)})

    return endpoint


async def _reset(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    ctx.core.reset()
    return json_reply(200, {"code": "reset"})


async def _seed(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("demo"):
        seed_demo(ctx.core)
    snapshot.seed(ctx.core, data)
    return json_reply(200, {"code": "seeded", "state": snapshot.state_json(ctx.core)})


async def _state(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    return json_reply(200, {"code": "state", **snapshot.state_json(ctx.core)})


async def _install(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    origin = data.get("plugin_origin") or ctx.plugin_origin
    try:
        installation = await ctx.core.install(
            str(origin),
            str(data["code"]),
            models=data.get("models"),
            capabilities=data.get("capabilities"),
        )
    except InstallError as exc:
        return _install_failed(exc)
    return json_reply(
        201, {"code": "installed", "installation": snapshot.installation_json(installation)}
    )


async def _rotate(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("installation_id") not in ctx.core.state.installations:
        return json_reply(404, {"code": "installation_not_found"})
    try:
        installation = await ctx.core.rotate(data["installation_id"], str(data["code"]))
    except InstallError as exc:
        return _install_failed(exc)
    return json_reply(
        200, {"code": "rotated", "installation": snapshot.installation_json(installation)}
    )


async def _uninstall(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("installation_id") not in ctx.core.state.installations:
        return json_reply(404, {"code": "installation_not_found"})
    ctx.core.uninstall(data["installation_id"])
    return json_reply(200, {"code": "uninstalled"})


async def _launch(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    context = data.get("context")
    if context is None:
        content_id = data.get("content_id")
        context = (
            {"kind": "content", "content_id": content_id} if content_id else {"kind": "manage"}
        )
    launch = ctx.core.issue_launch(data["installation_id"], data["person_id"], context)
    return json_reply(200, {"code": "launch", "url": launch.url, "launch_code": launch.code})


async def _content(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    """A human acting in core: edit (new version), publish, unpublish, bump_revision."""
    act = _HUMAN_ACTIONS.get(data["action"])
    if act is None:
        raise ValueError(f"action must be one of {', '.join(_HUMAN_ACTIONS)}")
    act(ctx.core, data["content_id"])
    return json_reply(200, {"code": "content_changed", "state": snapshot.state_json(ctx.core)})


_HUMAN_ACTIONS: dict[str, Callable[[FakeCore, str], object]] = {
    "edit": lambda core, content_id: core.state.edit(content_id),
    "publish": lambda core, content_id: core.state.publish_now(content_id, core.now_ms()),
    "unpublish": lambda core, content_id: core.state.unpublish_now(content_id, core.now_ms()),
    "bump_revision": lambda core, content_id: core.state.bump_revision(content_id),
}


async def _faults(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    faults = ctx.core.faults
    return json_reply(
        200,
        {
            "code": "faults",
            "pending": faults.pending(),
            "latency": faults.latency_s,
            "random": faults.policy is not None,
        },
    )


async def _push_faults(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    faults = ctx.core.faults
    entries = data.get("faults", [])
    if not isinstance(entries, list):
        raise ValueError("faults must be a list")
    parsed = [(Fault.from_json(entry), entry) for entry in entries]  # all or nothing
    if data.get("replace"):
        faults.clear()
    for fault, entry in parsed:
        faults.push(
            fault,
            endpoint=entry.get("endpoint", "transitions"),
            content_id=entry.get("content_id"),
            times=int(entry.get("times", 1)),
        )
    if "random" in data:
        spec = data["random"]
        faults.policy = (
            None
            if spec is None
            else RandomFaults(
                spec["seed"],
                float(spec.get("rate", 0.3)),
                endpoints=spec.get("endpoints", ["transitions"]),
            )
        )
    return await _faults(ctx, {}, query)


async def _clear_faults(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    ctx.core.faults.clear()
    return await _faults(ctx, {}, query)


async def _latency(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    endpoint = data.get("endpoint", "transitions")
    if endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {ENDPOINTS}")
    ctx.core.faults.set_latency(float(data["seconds"]), endpoint)
    return await _faults(ctx, {}, query)


async def _clock(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    clock = ctx.core.clock
    if "advance_ms" in data:
        clock.advance(int(data["advance_ms"]))
    elif "set_ms" in data:
        clock.set(int(data["set_ms"]))
    elif "set" in data:
        at = parse_rfc3339(data["set"])
        if at is None:
            raise ValueError("set must be an RFC 3339 UTC time like 2026-07-01T09:00:00Z")
        clock.set(at)
    elif data.get("reset"):
        clock.reset()
    now = ctx.core.now_ms()
    return json_reply(200, {"code": "clock", "now_ms": now, "now": rfc3339(now)})


async def _calls(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    since = int(query.get("since", "0"))
    endpoint = query.get("endpoint")
    calls = [
        call.to_json()
        for call in ctx.core.calls.calls
        if call.seq > since and (endpoint is None or call.endpoint == endpoint)
    ]
    return json_reply(200, {"code": "calls", "calls": calls})


async def _clear_calls(ctx: Context, data: dict[str, Any], query: dict[str, str]) -> Reply:
    ctx.core.calls.clear()
    return json_reply(200, {"code": "calls", "calls": []})


def _install_failed(exc: InstallError) -> Reply:
    return json_reply(
        502,
        {
            "code": "install_failed",
            "reason": exc.reason,
            "status": exc.status,
            "plugin_code": exc.code,
        },
    )


ROUTES = tuple(
    Route(method, f"/__fake/{name}", _json_endpoint(handler))
    for method, name, handler in (
        ("POST", "reset", _reset),
        ("POST", "seed", _seed),
        ("GET", "state", _state),
        ("POST", "install", _install),
        ("POST", "rotate", _rotate),
        ("POST", "uninstall", _uninstall),
        ("POST", "launch", _launch),
        ("POST", "content", _content),
        ("GET", "faults", _faults),
        ("POST", "faults", _push_faults),
        ("DELETE", "faults", _clear_faults),
        ("POST", "latency", _latency),
        ("POST", "clock", _clock),
        ("GET", "calls", _calls),
        ("DELETE", "calls", _clear_calls),
    )
)
