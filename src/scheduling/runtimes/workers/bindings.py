"""What the platform hands the Worker besides its code: the bindings on its env, and the
per-invocation limits, known by the texts of the errors workerd gives them.

D1 (`PLUGIN_DB`): a Worker deployed without it still starts; what needs the database
answers 500 `misconfigured` naming the binding, like a missing variable.

Rate Limiting (`LAUNCH_LIMITER`, optional): counts failed launch exchanges across the
isolates of a Cloudflare location. Without it each isolate counts on its own.

Durable Object namespace (`SCHEDULE_CLOCK`, optional): an alarm clock per installation
(`ScheduleClock` in `src/entry.py`); with it each installation's due rows are sent at their
second by its clock's alarm, and the cron's tick is their watchdog.

The limits: each of `limits.INVOCATION_LIMITS` the platform enforces names its text
(`refusal`), e.g.

- D1 (and any call to a Cloudflare service from a binding) past the invocation's allowance
  (50 D1 queries on Workers Free, 1,000 on Paid; 1,000 calls to services):
  `Too many API requests by single Worker invocation.`
- `fetch` past the subrequest limit (50 on Free): `Too many subrequests by single Worker
  invocation.`, which newer runtimes follow with `To configure this limit, refer to
  https://developers.cloudflare.com/workers/platform/limits/`.

Case varies between releases ("worker invocation"), so the match ignores it. The adapters
turn a match into the port's `LimitReached`, which the runner treats as the end of this
invocation's allowance, not as a failure.

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


def d1_binding(env: Any, name: str = DB_BINDING) -> Any | None:
    """The binding named `name`, or None when the env has none (or something that is not D1)."""
    try:
        binding = getattr(env, name)
    except AttributeError:  # the SDK's env wrapper raises it for a name the Worker lacks
        return None
    has = all(callable(getattr(binding, method, None)) for method in ("prepare", "batch"))
    return binding if has else None


class UnboundDatabase:
    """The Database port of a Worker without its D1 binding: every use is `Misconfigured`.

    So the routes that need no database (the manifest, the stylesheet) still
    answer, the others answer 500 `misconfigured`, and a tick fails as
    `runner_tick_failed`; each logs the binding's name.
    """

    def __init__(self, name: str = DB_BINDING) -> None:
        self.name = name

    def _unbound(self) -> Misconfigured:
        return Misconfigured(
            self.name, "is not bound: the Worker needs a D1 binding of this name (wrangler.jsonc)"
        )

    def prepare(self, sql: str) -> Statement:
        raise self._unbound()

    async def batch(self, statements: Sequence[Statement]) -> list[Result]:
        raise self._unbound()


def rate_limit_binding(env: Any, name: str = LAUNCH_LIMITER_BINDING) -> Any | None:
    """The Rate Limiting binding named `name`, or None when the env has none (or something
    without a `limit` method, such as a variable of that name)."""
    try:
        binding = getattr(env, name)
    except AttributeError:
        return None
    return binding if callable(getattr(binding, "limit", None)) else None


def clock_binding(env: Any, name: str = SCHEDULE_CLOCK_BINDING) -> Any | None:
    """The Durable Object namespace named `name` (the installations' alarm clocks), or None
    when the env has none (or something without `getByName`, such as a variable)."""
    try:
        binding = getattr(env, name)
    except AttributeError:
        return None
    return binding if callable(getattr(binding, "getByName", None)) else None


class BindingRateLimiter:
    """The `RateLimiter` port over Workers' Rate Limiting binding.

    `await binding.limit({"key": key})` answers `{"success": bool}`; the SDK's env wrapper
    converts the dict both ways. If the binding fails or answers something else, the
    isolate's own count (`fallback`) decides, so guessers are still held back.
    """

    def __init__(
        self, binding: Any, fallback: RateLimiter, name: str = LAUNCH_LIMITER_BINDING
    ) -> None:
        self._binding = binding
        self._fallback = fallback
        self._name = name

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
        log.warning("%s %s; counting in this isolate instead", self._name, problem)
        return await self._fallback.limit(key)


_REFUSALS = tuple(
    (re.compile(limit.refusal, re.IGNORECASE), limit.refused_as)
    for limit in INVOCATION_LIMITS
    if limit.refusal is not None and limit.refused_as is not None
)


def limit_of(message: str) -> LimitReached | None:
    """The limit an error's text names, or None for any other error."""
    for text, kind in _REFUSALS:
        if text.search(message):
            return LimitReached(kind)
    return None


def refusal(message: str, otherwise: Exception) -> Exception:
    """What a binding's error means to the core: the limit its text names, or `otherwise`."""
    return limit_of(message) or otherwise
