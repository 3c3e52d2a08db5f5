"""The Worker's D1 binding, read from its env. A Worker deployed without it still starts:
what needs the database answers 500 `misconfigured` naming the binding, like a missing variable.

Imports no `js`, `pyodide` or `workers`, so it is tested under CPython too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduling.config import Misconfigured
from scheduling.ports import Result, Statement

DB_BINDING = "PLUGIN_DB"


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
