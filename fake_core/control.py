"""The control API under /__fake/: JSON endpoints that drive the fake core.

Meant for tests and tools run against `python -m fake_core`; it is not part
of protocol v1 and listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fake_core import snapshot
from fake_core.clock import parse_rfc3339, rfc3339
from fake_core.demo import seed_demo
from fake_core.faults import ENDPOINTS, Fault, RandomFaults
from fake_core.install import InstallError
from fake_core.wire import Reply, json_reply

if TYPE_CHECKING:
    from fake_core.app import FakeCoreApp

Handler = Callable[["FakeCoreApp", dict[str, Any], dict[str, str]], Awaitable[Reply]]
_ROUTES: dict[tuple[str, str], Handler] = {}


def route(method: str, name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _ROUTES[(method, name)] = handler
        return handler

    return register


async def handle(
    app: FakeCoreApp, method: str, name: str, query: dict[str, str], body: bytes
) -> Reply:
    handler = _ROUTES.get((method, name))
    if handler is None:
        known = any(key[1] == name for key in _ROUTES)
        return json_reply(405 if known else 404, {"code": "not_found"})
    try:
        data = json.loads(body) if body else {}
        if not isinstance(data, dict):
            raise ValueError("body must be a JSON object")
        return await handler(app, data, query)
    except (ValueError, KeyError, TypeError) as exc:
        return json_reply(400, {"code": "invalid_request", "message": str(exc)})


@route("POST", "reset")
async def _reset(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    app.core.reset()
    return json_reply(200, {"code": "reset"})


@route("POST", "seed")
async def _seed(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("demo"):
        seed_demo(app.core)
    snapshot.seed(app.core, data)
    return json_reply(200, {"code": "seeded", "state": snapshot.state_json(app.core)})


@route("GET", "state")
async def _state(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    return json_reply(200, {"code": "state", **snapshot.state_json(app.core)})


@route("POST", "install")
async def _install(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    origin = data.get("plugin_origin") or app.plugin_origin
    try:
        installation = await app.core.install(
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


@route("POST", "rotate")
async def _rotate(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("installation_id") not in app.core.state.installations:
        return json_reply(404, {"code": "installation_not_found"})
    try:
        installation = await app.core.rotate(data["installation_id"], str(data["code"]))
    except InstallError as exc:
        return _install_failed(exc)
    return json_reply(
        200, {"code": "rotated", "installation": snapshot.installation_json(installation)}
    )


@route("POST", "uninstall")
async def _uninstall(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    if data.get("installation_id") not in app.core.state.installations:
        return json_reply(404, {"code": "installation_not_found"})
    app.core.uninstall(data["installation_id"])
    return json_reply(200, {"code": "uninstalled"})


@route("POST", "launch")
async def _launch(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    context = data.get("context")
    if context is None:
        content_id = data.get("content_id")
        context = (
            {"kind": "content", "content_id": content_id} if content_id else {"kind": "manage"}
        )
    launch = app.core.issue_launch(data["installation_id"], data["person_id"], context)
    return json_reply(200, {"code": "launch", "url": launch.url, "launch_code": launch.code})


@route("POST", "content")
async def _content(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    """A human acting in core: edit (new version), publish, unpublish, bump_revision."""
    state, content_id, action = app.core.state, data["content_id"], data["action"]
    if action == "edit":
        state.edit(content_id)
    elif action == "publish":
        state.publish_now(content_id, app.core.now_ms())
    elif action == "unpublish":
        state.unpublish_now(content_id, app.core.now_ms())
    elif action == "bump_revision":
        state.bump_revision(content_id)
    else:
        raise ValueError("action must be edit, publish, unpublish or bump_revision")
    return json_reply(200, {"code": "content_changed", "state": snapshot.state_json(app.core)})


@route("GET", "faults")
async def _faults(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    faults = app.core.faults
    return json_reply(
        200,
        {
            "code": "faults",
            "pending": faults.pending(),
            "latency": faults.latency_s,
            "random": faults.policy is not None,
        },
    )


@route("POST", "faults")
async def _push_faults(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    faults = app.core.faults
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
    return await _faults(app, {}, query)


@route("DELETE", "faults")
async def _clear_faults(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    app.core.faults.clear()
    return await _faults(app, {}, query)


@route("POST", "latency")
async def _latency(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    endpoint = data.get("endpoint", "transitions")
    if endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {ENDPOINTS}")
    app.core.faults.set_latency(float(data["seconds"]), endpoint)
    return await _faults(app, {}, query)


@route("POST", "clock")
async def _clock(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    clock = app.core.clock
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
    now = app.core.now_ms()
    return json_reply(200, {"code": "clock", "now_ms": now, "now": rfc3339(now)})


@route("GET", "calls")
async def _calls(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    since = int(query.get("since", "0"))
    endpoint = query.get("endpoint")
    calls = [
        call.to_json()
        for call in app.core.calls.calls
        if call.seq > since and (endpoint is None or call.endpoint == endpoint)
    ]
    return json_reply(200, {"code": "calls", "calls": calls})


@route("DELETE", "calls")
async def _clear_calls(app: FakeCoreApp, data: dict[str, Any], query: dict[str, str]) -> Reply:
    app.core.calls.clear()
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
