"""After a schedule is written (created, superseded, tried again, cancelled): its
installation's alarm clock is told when the installation next has something due, as D1 says
once the write is done.

A clock only ever moves earlier when told, so a cancel leaves it where it was (it may wake
once for nothing, read D1 and sleep until what is next). Telling is best effort and never
fails the write it follows: a clock that was not told is told by the cron's watchdog within
a minute, and what it leaves overdue the watchdog sends.
"""

from __future__ import annotations

from scheduling.domain.wake_times import wake_for
from scheduling.repository import wake_ups
from scheduling.services import Services, log


async def tell_clock(services: Services, installation_id: str) -> None:
    clocks = services.clocks
    if clocks is None:
        return
    try:
        due = await wake_ups.next_due(services.db, installation_id)
        if due is not None:
            await clocks.arm(installation_id, wake_for(due, services.config.clock_lead_ms))
    except Exception as exc:  # the write stands; the watchdog tells the clock
        log.warning(
            "installation %s: its clock was not told (%s); the watchdog tells it within a minute",
            installation_id,
            type(exc).__name__,
        )
