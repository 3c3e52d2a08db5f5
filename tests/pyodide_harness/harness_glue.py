"""Runs inside Pyodide: calls the Worker entry the way workerd does, plus test-only helpers.

serve.mjs imports this module after `src/` and the packages are on `sys.path`.
Nothing in `src/` imports it; it never ships.
"""

from __future__ import annotations

import base64
import inspect
import json
import sys
from typing import Any

from pyodide.code import relaxed_call
from pyodide.ffi import JsProxy, to_js
from workers import python_from_rpc, python_to_rpc

import entry


async def invoke(ctx: JsProxy, env: JsProxy, handler: str, *args: JsProxy) -> Any:
    """What workerd does for a class entrypoint: `Default(ctx, env)`, then the handler.

    Arguments cross with `python_from_rpc` and the result with `python_to_rpc`;
    the handler is called relaxed, so `scheduled(self, controller)` and
    `scheduled(self, controller, env, ctx)` both work.
    """
    instance = entry.Default(ctx, env)
    method = getattr(instance, handler)
    result = relaxed_call(method, *(python_from_rpc(arg) for arg in args))
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


# The Durable Objects of the entry's ScheduleClock class, by name: constructed once each, as
# workerd keeps an object's instance while it lives.
_clocks: dict[str, Any] = {}


async def clock_call(name: str, ctx: JsProxy, env: JsProxy, method: str, *args: JsProxy) -> Any:
    """A call to the `ScheduleClock` object `name` (an RPC method, or `alarm`), as workerd makes
    it: the instance built once with its `ctx` and the env, arguments and result crossing as
    RPC values, the method called relaxed."""
    instance = _clocks.get(name)
    if instance is None:
        instance = _clocks[name] = entry.ScheduleClock(ctx, env)
    result = relaxed_call(getattr(instance, method), *(python_from_rpc(arg) for arg in args))
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


async def clock_tell(env: JsProxy, payload: str) -> None:
    """Tell the clocks of the installations `payload` names (a JSON list) when each next has
    something due, as a create does after its write (`actions.clock.tell_clock`)."""
    from workers import _EnvWrapper

    from scheduling.actions.releases import tell_clock
    from scheduling.runtimes.workers import isolate

    services = isolate.app_for(_EnvWrapper(env)).services
    for installation_id in json.loads(payload):
        await tell_clock(services, installation_id)


def clock_forget() -> None:
    """Forget every object (a fresh namespace)."""
    _clocks.clear()


def _crypto(key_b64: str) -> Any:
    from scheduling.runtimes.workers.adapters import WebCrypto

    return WebCrypto(base64.b64decode(key_b64, validate=True))


async def crypto_seal(key_b64: str, plaintext: str, context: str) -> str:
    return str(await _crypto(key_b64).seal(plaintext, context))


async def crypto_open(key_b64: str, sealed: str, context: str) -> Any:
    """{"plaintext": …} or {"error": "<exception class name>"}."""
    from scheduling.ports import UnreadableSecret

    try:
        result = {"plaintext": await _crypto(key_b64).open(sealed, context)}
    except UnreadableSecret:
        result = {"error": "UnreadableSecret"}
    return to_js(result, dict_converter=_object_from_entries())


async def crypto_sha256(key_b64: str, value: str) -> str:
    return str(await _crypto(key_b64).sha256_hex(value))


async def crypto_hmac_sha256(key_b64: str, hmac_key_hex: str, message_hex: str) -> str:
    digest = await _crypto(key_b64).hmac_sha256(
        bytes.fromhex(hmac_key_hex), bytes.fromhex(message_hex)
    )
    return str(digest.hex())


def _object_from_entries() -> Any:
    import js

    return js.Object.fromEntries


def _qualname(obj: Any) -> str:
    kind = obj if isinstance(obj, type) else type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def info(env: JsProxy) -> Any:
    """Where the Worker runs and which adapters its App was built with (for the proof test)."""
    import _cloudflare_compat_flags
    from workers import _EnvWrapper

    from scheduling.runtimes.workers import isolate

    services = isolate.app_for(_EnvWrapper(env)).services
    crypto: str
    try:
        crypto = _qualname(services.crypto)
    except Exception as exc:  # a bad TOKEN_KEY: report the factory instead
        crypto = f"unbuilt ({type(exc).__name__}); factory {_qualname(services.make_crypto)}"
    loaded = sorted(
        name
        for name in sys.modules
        if name.startswith("scheduling.runtimes.") and name.count(".") >= 2
    )
    result = {
        "python_version": sys.version,
        "platform": sys.platform,
        "implementation": sys.implementation.name,
        "pyodide": __import__("pyodide").__version__,
        "entry_file": entry.__file__,
        "services": {
            "db": _qualname(services.db),
            "http": _qualname(services.http),
            "clock": _qualname(services.clock),
            "crypto": crypto,
            "make_crypto": _qualname(services.make_crypto),
            "rate_limiter": _qualname(services.rate_limiter),
        },
        "runtime_modules": loaded,
        "compat_flags": {
            name: bool(getattr(_cloudflare_compat_flags, name))
            for name in (
                "python_request_headers_preserve_commas",
                "python_workflows_implicit_dependencies",
                "python_no_such_flag",
            )
        },
    }
    return to_js(result, dict_converter=_object_from_entries())


async def d1(env: JsProxy, payload: str) -> str:
    """One call of the Database port, as the Worker makes it: `D1Database` over the env binding.

    `payload` is {"op": "all"|"first"|"run"|"batch", "statements": [{"sql", "params"}]};
    all/first/run take exactly one statement; a batch's `{"foreign": true}` is a statement
    prepared elsewhere (which the adapter refuses). Answers (as JSON text) {"results": [result, …]}
    (one per statement), {"row": row-or-null} for first, or {"error": {"type", "message",
    "constraint"}} when preparing, binding or running raised; a result is
    {"results": rows, "meta": {"changes", "last_row_id"}}.
    """
    from workers import _EnvWrapper

    from scheduling.ports import DatabaseError, Result
    from scheduling.runtimes.workers.adapters import D1Database
    from scheduling.runtimes.workers.bindings import DB_BINDING

    def result(value: Result) -> dict[str, Any]:
        meta = {"changes": value.meta.changes, "last_row_id": value.meta.last_row_id}
        return {"results": value.results, "meta": meta}

    request = json.loads(payload)
    op = request["op"]
    if op not in ("all", "first", "run", "batch"):
        raise ValueError(f"unknown op {op!r}")
    if op != "batch" and len(request["statements"]) != 1:
        raise ValueError(f"{op} takes exactly one statement, not {len(request['statements'])}")
    db = D1Database(getattr(_EnvWrapper(env), DB_BINDING))
    answer: dict[str, Any]
    try:
        statements: list[Any] = [  # a foreign one is any object, which batch() refuses
            object()
            if item.get("foreign")
            else db.prepare(item["sql"]).bind(*item.get("params", []))
            for item in request["statements"]
        ]
        if op == "batch":
            answer = {"results": [result(item) for item in await db.batch(statements)]}
        elif op == "first":
            answer = {"row": await statements[0].first()}
        elif op == "all":
            answer = {"results": [result(await statements[0].all())]}
        else:
            answer = {"results": [result(await statements[0].run())]}
    except Exception as exc:
        # A DatabaseError is the port's; anything else (e.g. a JsException from bind() for an
        # int Pyodide turns into a BigInt) is what the Worker itself would see raised.
        constraint = isinstance(exc, DatabaseError) and exc.constraint
        message = str(exc).splitlines()[0] if str(exc) else ""  # a JsException adds its JS stack
        answer = {
            "error": {"type": type(exc).__name__, "message": message, "constraint": constraint}
        }
    return json.dumps(answer)


async def send_all(payload: str) -> str:
    """Send every request at once through `WorkersFetch`, in list order; report each outcome.

    `payload` is {"requests": [{"url", "method", "headers", "body", "timeout_s",
    "max_body_bytes"}]}. Answers {"outcomes": [{"status", "body", "truncated", "elapsed_ms"} or
    {"error", "detail", "elapsed_ms"}]}, where
    "error" is the TransportError class name (TransportTimeout for a timeout).
    """
    import asyncio
    import time

    from scheduling.ports import OutboundRequest, TransportError
    from scheduling.runtimes.workers.adapters import WorkersFetch

    client = WorkersFetch()

    async def send(spec: dict[str, Any]) -> dict[str, Any]:
        body = spec.get("body")
        request = OutboundRequest(
            method=spec.get("method", "GET"),
            url=spec["url"],
            headers=spec.get("headers", {}),
            body=None if body is None else body.encode(),
            timeout_s=spec.get("timeout_s", 10.0),
            max_body_bytes=spec.get("max_body_bytes", 1 << 20),
        )
        started = time.monotonic()
        outcome: dict[str, Any]
        try:
            response = await client.send(request)
            outcome = {
                "status": response.status,
                "body": response.body.decode(errors="replace"),
                "truncated": response.truncated,
            }
        except TransportError as exc:
            outcome = {"error": type(exc).__name__, "detail": str(exc)}
        outcome["elapsed_ms"] = round((time.monotonic() - started) * 1000)
        return outcome

    # Each task calls js.fetch in its first step, so fetches start in list order.
    outcomes = await asyncio.gather(*(send(spec) for spec in json.loads(payload)["requests"]))
    return json.dumps({"outcomes": outcomes})
