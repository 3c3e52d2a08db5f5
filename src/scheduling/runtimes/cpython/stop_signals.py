"""SIGINT and SIGTERM for `serve`, heard from its first line to its last.

`python -m scheduling serve` installs these handlers before anything slow (its
imports, reading the variables, the migrations, binding the port), so a signal
at any point of start-up asks it to stop instead of being lost or killing it
half-way. Each stage looks at `heard` before it starts; once the HTTP server
exists, a signal also tells it to stop serving (a second one, to stop waiting
for open connections). `signal.signal` rather than the event loop's handlers,
as uvicorn does, because the loop does not run during the synchronous stages.

Only the standard library here: `__main__` imports this module first.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    def __init__(self) -> None:
        self.heard = 0
        self._on_stop: Callable[[int], None] | None = None

    @classmethod
    def install(cls) -> StopSignals:
        """From now on, SIGINT and SIGTERM only ask to stop (they never raise)."""
        stop = cls()
        for sig in STOP_SIGNALS:
            signal.signal(sig, stop._handle)
        return stop

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.request()

    def request(self) -> None:
        self.heard += 1
        if self._on_stop is not None:
            self._on_stop(self.heard)

    def on_stop(self, callback: Callable[[int], None]) -> None:
        """Call `callback(times heard)` on each stop request from now on, and at once if one
        came before. It must bear being called twice for the same request."""
        self._on_stop = callback
        if self.heard:
            callback(self.heard)
