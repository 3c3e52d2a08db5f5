"""Wall clock from the runtime (`Date.now()`; frozen during CPU work in workerd, by design)."""

from __future__ import annotations

import js


class WorkersClock:
    def now_ms(self) -> int:
        return int(js.Date.now())
