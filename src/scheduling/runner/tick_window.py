"""How far a tick's `scheduledTime` may lie from the wall clock, whoever asks for the tick:
the cron, the Worker's `scheduled()` under `wrangler dev --test-scheduled` (whose
`/__scheduled?time=` any page a developer opens can ask for, with no Host or Origin check),
or the local `/__scheduled`.

Ahead: far enough to run the tick of a schedule made a few minutes ahead without waiting
for it, and never past MAX_LATENESS_MS, so a moved tick may send a schedule early but never
ends one that is not yet due as too late (a tick 300 days ahead ended every pending schedule
unsent). Behind: the tick runs at the wall clock anyway, as a late delivery does; a day
bounds the delay it records.
"""

from __future__ import annotations

MAX_TICK_AHEAD_MS = 15 * 60 * 1000
MAX_TICK_BEHIND_MS = 24 * 60 * 60 * 1000


class TickTimeRefused(ValueError):
    """A tick asked for at an instant outside the window: nothing run."""


def window_problem(scheduled_time: int, now: int, max_lateness_ms: int) -> str | None:
    """None when a tick may stand for `scheduled_time` at `now`, else what the window is."""
    ahead = min(MAX_TICK_AHEAD_MS, max_lateness_ms)
    if now - MAX_TICK_BEHIND_MS <= scheduled_time <= now + ahead:
        return None
    return window_words(max_lateness_ms)


def window_words(max_lateness_ms: int) -> str:
    return (
        f"time must be epoch milliseconds at most"
        f" {min(MAX_TICK_AHEAD_MS, max_lateness_ms) // 1000} s after now"
        f" and at most {MAX_TICK_BEHIND_MS // 3_600_000} h before it"
    )
