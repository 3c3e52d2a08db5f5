"""Cancel a waiting schedule. It never calls Dee Wan and never reverses a change made.

Who may cancel is judged by the rights kept with the session when its page was
shown (`Session.rights`), the same rule the page's Cancel button follows; the
cancel itself is a compare-and-set on "still waiting", so a claim that lands
first wins. Before it, a confirmation page names what would be cancelled
(`preview_cancel`), by the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.access import open_access
from scheduling.actions.tell_clock import tell_clock
from scheduling.actions.titles import read_titles
from scheduling.domain.refusals import Refusal
from scheduling.domain.schedule import Schedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import WAITING, Status
from scheduling.ports import Database
from scheduling.repository import schedules
from scheduling.repository.sessions import Session
from scheduling.services import Services, log

# The confirmation names the content by its title when Dee Wan gives it within this time;
# the cancel itself never waits for Dee Wan.
TITLE_BUDGET_S = 2.0


@dataclass(frozen=True)
class CancelPreview:
    """What the cancel confirmation shows: the schedule, its content's title, and now."""

    schedule: Schedule
    title: str | None  # the content's title, when Dee Wan gave it in time
    now_ms: int


async def preview_cancel(services: Services, session: Session, schedule_id: str) -> CancelPreview:
    """What a cancel would end, refused as the cancel itself would be."""
    schedule = await _allowed(services.db, session, schedule_id)
    if schedule.status not in WAITING:
        raise _not_waiting(schedule)
    title = await _title(services, session, schedule)
    return CancelPreview(schedule, title, services.clock.now_ms())


async def cancel_schedule(services: Services, session: Session, schedule_id: str) -> None:
    await _allowed(services.db, session, schedule_id)
    await cancel_allowed(
        services,
        session.installation_id,
        schedule_id,
        person_id=session.person_id,
        person_name=session.person_name,
    )


async def cancel_allowed(
    services: Services,
    installation_id: str,
    schedule_id: str,
    *,
    person_id: str,
    person_name: str,
    by: str = "",
) -> None:
    """The cancel itself, once the caller judged it may (a page's session, an agent's key):
    one compare-and-set on "still waiting", then the installation's clock told."""
    db = services.db
    cancelled = await schedules.cancel(
        db,
        installation_id,
        schedule_id,
        services.clock.now_ms(),
        person_id=person_id,
        person_name=person_name,
    )
    if not cancelled:
        current = await schedules.get(db, installation_id, schedule_id)
        raise _not_waiting(current)
    log.info("installation %s: schedule %s cancelled%s", installation_id, schedule_id, by)
    await tell_clock(services, installation_id)


async def _allowed(db: Database, session: Session, schedule_id: str) -> Schedule:
    """The schedule, if it exists in the session's installation and the session may cancel it."""
    installation_id = session.installation_id
    schedule = await schedules.get(db, installation_id, schedule_id) if is_id(schedule_id) else None
    if schedule is None:
        raise Refusal.explained(404, "schedule_not_found")
    refused = session.rights.cancel_refusal(schedule)
    if refused is not None:
        raise Refusal.explained(403, refused)
    return schedule


def _not_waiting(schedule: Schedule | None) -> Refusal:
    running = schedule is not None and schedule.status == Status.RUNNING
    return Refusal.explained(409, "execution_in_progress" if running else "not_cancellable")


async def _title(services: Services, session: Session, schedule: Schedule) -> str | None:
    """The content's title, read with the session's delegation; None when it cannot be."""
    try:
        access = await open_access(services, session)
    except Refusal:
        return None
    titles = await read_titles(services, access, {schedule.content_id}, budget_s=TITLE_BUDGET_S)
    return titles.title(schedule.content_id)
