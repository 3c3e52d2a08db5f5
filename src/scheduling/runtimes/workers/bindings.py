"""What the platform hands the Worker besides its code: the bindings on its env, and the
per-invocation limits (`limits.INVOCATION_LIMITS`), known by the texts of workerd's errors.

A Worker without its D1 binding still starts: what needs the database answers 500
`misconfigured` naming it. `LAUNCH_LIMITER` (Rate Limiting) and `SCHEDULE_CLOCK` (a Durable
Object per installation, `ScheduleClock` in `src/entry.py`) are optional.

Imports no `js`, `pyodide` or `workers`, so it is tested under CPython too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from scheduling.config import Misconfigured
from scheduling.limits import INVOCATION_LIMITS
from scheduling.ports import LimitReached, RateLimiter, Result, Statement
from scheduling.services import log

DB_BINDING = "PLUGIN_DB"
LAUNCH_LIMITER_BINDING = "LAUNCH_LIMITER"
SCHEDULE_CLOCK_BINDING = "SCHEDULE_CLOCK"
# What each binding must answer to be taken (a variable of the same name is not the binding).
_METHODS = {
    DB_BINDING: ("prepare", "batch"),
    LAUNCH_LIMITER_BINDING: ("limit",),
    SCHEDULE_CLOCK_BINDING: ("getByName",),
}


def bound(env: Any, name: str) -> Any | None:
    """The binding `name` on `env`, or None when the env has none (or something else)."""
    try:
        binding = getattr(env, name)
    except AttributeError:  # the SDK's env wrapper raises it for a name the Worker lacks
        return None
    return binding if all(callable(getattr(binding, m, None)) for m in _METHODS[name]) else None


class UnboundDatabase:
    """The Database port of a Worker without its D1 binding: every use is `Misconfigured`, so
    the routes that need no database still answer and a tick fails naming the binding."""

    def _unbound(self) -> Misconfigured:
        return Misconfigured(
            DB_BINDING, "is not bound: the Worker needs a D1 binding of this name (wrangler.jsonc)"
        )

    def prepare(self, sql: str) -> Statement:
        raise self._unbound()

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        raise self._unbound()


class BindingRateLimiter:
    """The `RateLimiter` port over Workers' Rate Limiting binding (`limit({"key": key})`
    answers `{"success": bool}`). If the binding fails or answers something else, the
    isolate's own count (`fallback`) decides, so guessers are still held back."""

    def __init__(self, binding: Any, fallback: RateLimiter) -> None:
        self._binding = binding
        self._fallback = fallback

    async def limit(self, key: str) -> bool:
        try:
            answer = await self._binding.limit({"key": key})
            success = (
                answer.get("success")
                if isinstance(answer, dict)
                else getattr(answer, "success", None)
            )
        except Exception as exc:  # any failure of the binding: count here instead
            problem = f"failed ({type(exc).__name__})"
        else:
            if isinstance(success, bool):
                return success
            problem = "answered without a boolean success"
        # The key names a client: it stays out of the log.
        log.warning("%s %s; counting in this isolate instead", LAUNCH_LIMITER_BINDING, problem)
        return await self._fallback.limit(key)


_REFUSALS = tuple(
    (re.compile(limit.refusal, re.IGNORECASE), limit.refused_as)
    for limit in INVOCATION_LIMITS
    if limit.refusal is not None and limit.refused_as is not None
)


def limit_of(message: str) -> LimitReached | None:
    """The limit an error's text names (case varies between releases), or None."""
    for text, kind in _REFUSALS:
        if text.search(message):
            return LimitReached(kind)
    return None
