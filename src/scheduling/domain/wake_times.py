"""When an installation's alarm clock wakes, and when the cron's watchdog steps in.

A clock wakes `CLOCK_LEAD_MS` before the earliest due second of its installation (a Python
isolate starts in about a second), and its invocation then waits for that second itself:
nothing is ever claimed before it is due. The cron still runs every minute, as the
watchdog: it tells every clock what is due before its next run, and sends itself what is
overdue by more than `WATCHDOG_GRACE_MS` (an alarm lost, a clock never told, the binding
gone).
"""

from __future__ import annotations

# The watchdog leaves a due row this long to its installation's clock before it sends it
# itself: alarms fire within milliseconds, and an installation's burst of 100 rows at a
# 200 ms Dee Wan takes its clock about 4 s; Durable Objects may delay an alarm "up to a
# minute" during a failover, and then the watchdog sends what the clock did not.
WATCHDOG_GRACE_MS = 30_000
# Each minute the watchdog tells the clocks of what is due before its next run, with a
# minute to spare: a clock that was never told (or lost its alarm) still wakes on time.
WATCHDOG_HORIZON_MS = 2 * 60_000
# An alarm whose rows the per-installation cap holds back (another runner's claims fill it)
# tries again after this long rather than at once.
HELD_BACK_RETRY_MS = 1_000
# An alarm that failed wakes again after 2 s, doubling to a minute (as the platform's own
# retries of a throwing alarm, which stop after six).
FIRST_RETRY_MS = 2_000
MAX_RETRY_MS = 60_000


def wake_for(due_at: int, lead_ms: int) -> int:
    """When the clock of a row due at `due_at` wakes."""
    return due_at - lead_ms


def retry_after_failure(now: int, failures: int) -> int:
    """When a clock whose alarm failed `failures` times in a row (1 for the first) wakes."""
    return now + min(MAX_RETRY_MS, FIRST_RETRY_MS << min(16, max(0, failures - 1)))
