"""Runs inside Pyodide: calls the Worker entry the way workerd does, plus test-only helpers.

serve.mjs imports this module after `src/` and the packages are on `sys.path`.
Nothing in `src/` imports it; it never ships.
"""

from __future__ import annotations

import base64
import inspect
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


def _crypto(key_b64: str) -> Any:
    from scheduling.runtimes.workers.crypto import WebCrypto

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


def _object_from_entries() -> Any:
    import js

    return js.Object.fromEntries


def _qualname(obj: Any) -> str:
    kind = obj if isinstance(obj, type) else type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def info(env: JsProxy) -> Any:
    """Where the Worker runs and which adapters its App was built with (for the proof test)."""
    from workers import _EnvWrapper

    app = entry._app_for(_EnvWrapper(env))
    services = app.services
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
        },
        "runtime_modules": loaded,
    }
    return to_js(result, dict_converter=_object_from_entries())
