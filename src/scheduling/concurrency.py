"""Calls to Dee Wan run at most `SEND_CONCURRENCY` at a time, on every runtime.

Workers lets one invocation have six connections waiting for response headers
and holds the rest back; a request's timeout must not run while it waits for a
slot. So the core admits each call to a slot itself, and only then does the
call (and its timer) start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def gather_limited(limit: int, calls: Iterable[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run each call once a slot is free, at most `limit` at a time; results in call order."""
    slots = asyncio.Semaphore(limit)

    async def admitted(call: Callable[[], Awaitable[T]]) -> T:
        async with slots:
            return await call()

    return list(await asyncio.gather(*(admitted(call) for call in calls)))
