"""A failure that repeats is logged once per interval, with a count.

A flood repeats one failure thousands of times a second (asyncio's `socket.accept() out of
system resource` with its traceback, uvicorn's `Invalid HTTP request received.`): logged
each time, 1,500 half-sent heads wrote 18.6 MB of identical tracebacks in 12 s. Here the
first warning or error of a kind (its logger, level and message template) goes through;
the same kind is then counted, not written, until the interval has passed; the next one
says how many were not written, and `flush()` (run every interval and at the end) says it
for a kind that stopped repeating.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

INTERVAL_S = 10.0
# Records `flush()` writes pass through; so does what is below WARNING (no failure).
_SUMMARY = "repeated_summary"

Kind = tuple[str, int, str]


@dataclass
class _Seen:
    said_at: float  # when one of this kind was last written
    unsaid: int = 0  # how many since then were only counted
    text: str = ""  # the last one's message, for the summary


class OncePerInterval(logging.Filter):
    """A handler's filter: each kind of warning or error at most once per `interval_s`."""

    def __init__(
        self, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._seen: dict[Kind, _Seen] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, _SUMMARY, False):
            return True
        kind = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        seen = self._seen.get(kind)
        if seen is not None and now - seen.said_at < self.interval_s:
            seen.unsaid += 1
            seen.text = record.getMessage()
            return False
        if seen is not None and seen.unsaid:
            record.msg = f"{record.getMessage()} ({_more(seen.unsaid, now - seen.said_at)})"
            record.args = None
        self._seen[kind] = _Seen(now)
        return True

    def flush(self, *, everything: bool = False) -> None:
        """Say what was counted and not written, for each kind whose interval has passed (or
        for every kind, at the end)."""
        now = self._clock()
        for (name, level, _), seen in list(self._seen.items()):
            if seen.unsaid and (everything or now - seen.said_at >= self.interval_s):
                logging.getLogger(name).log(
                    level,
                    "%s (%s)",
                    seen.text,
                    _more(seen.unsaid, now - seen.said_at),
                    extra={_SUMMARY: True},
                )
                seen.said_at, seen.unsaid = now, 0


def _more(count: int, seconds: float) -> str:
    return f"{count} more like it in the last {seconds:.0f} s, not written"


def install(interval_s: float = INTERVAL_S) -> OncePerInterval:
    """The filter on every handler of the root logger (as `serve` configures them)."""
    once = OncePerInterval(interval_s)
    for handler in logging.getLogger().handlers:
        handler.addFilter(once)
    return once
