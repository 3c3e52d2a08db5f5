"""Cancel a waiting schedule. It never calls Dee Wan and never reverses a change made.

Who may cancel is judged by the rights kept with the session when its page was
shown (`Session.rights`), the same rule the page's Cancel button follows; the
cancel itself is a compare-and-set on "still waiting", so a claim that lands
first wins.
"""

from __future__ import annotations

from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.ports import Database
from scheduling.repository import schedules
from scheduling.repository.sessions import Session
from scheduling.services import log


async def cancel_schedule(db: Database, now: int, session: Session, schedule_id: str) -> None:
    installation_id = session.installation_id
    schedule = await schedules.get(db, installation_id, schedule_id) if is_id(schedule_id) else None
    if schedule is None:
        raise Refusal.explained(404, "schedule_not_found")
    refused = session.rights.cancel_refusal(schedule)
    if refused is not None:
        raise Refusal.explained(403, refused)
    cancelled = await schedules.cancel(
        db,
        installation_id,
        schedule_id,
        now,
        person_id=session.person_id,
        person_name=session.person_name,
    )
    if not cancelled:
        current = await schedules.get(db, installation_id, schedule_id)
        running = current is not None and current.status == Status.RUNNING
        raise Refusal.explained(409, "execution_in_progress" if running else "not_cancellable")
    log.info("installation %s: schedule %s cancelled", installation_id, schedule_id)
