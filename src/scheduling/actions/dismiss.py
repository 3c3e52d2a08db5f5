"""Dismiss a refused schedule: a site admin takes it out of Needs attention, once someone has
seen to it. It never calls Dee Wan and changes nothing else of the schedule.

Only the manage launch dismisses (the installation's overview, which Dee Wan offers to site
admins); the plugin records who and when, and the card says so under Finished. A refused
schedule also leaves Needs attention by itself once a later schedule of the same content
and change is done (`Schedule.settled`).
"""

from __future__ import annotations

from scheduling.domain.refusals import Refusal
from scheduling.domain.secret_shapes import is_id
from scheduling.ports import Database
from scheduling.repository import schedules
from scheduling.repository.sessions import Session
from scheduling.services import log


async def dismiss_schedule(db: Database, now: int, session: Session, schedule_id: str) -> None:
    if session.context_kind != "manage":
        raise Refusal.explained(403, "dismiss_from_manage")
    installation_id = session.installation_id
    found = await schedules.get(db, installation_id, schedule_id) if is_id(schedule_id) else None
    if found is None:
        raise Refusal.explained(404, "schedule_not_found")
    dismissed = await schedules.dismiss(
        db,
        installation_id,
        schedule_id,
        now,
        person_id=session.person_id,
        person_name=session.person_name,
    )
    if not dismissed:
        raise Refusal.explained(409, "not_dismissable")
    log.info("installation %s: schedule %s dismissed", installation_id, schedule_id)
