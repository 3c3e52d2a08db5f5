"""Waiting in a test for something the code under test should make happen, without waiting
forever when it never will (issue 32: a change that made report code raise hung tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest


async def until(
    happened: Callable[[], object],
    what: str,
    *,
    before: asyncio.Future[Any] | None = None,
    within_s: float = 10,
) -> None:
    """Return once `happened()` is true, polling each millisecond. Fails at once when `before`
    (the work that was to make it happen) ends first, with the exception that ended it, and
    after `within_s` seconds of the loop's clock in any case."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not happened():
        if before is not None and before.done():
            before.result()
            pytest.fail(f"the work ended before {what}")
        if loop.time() > deadline:
            pytest.fail(f"{what} did not happen within {within_s} s")
        await asyncio.sleep(0.001)
