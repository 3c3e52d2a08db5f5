"""Who may cancel: from a content launch, only a person Dee Wan lets make that change now.

Otherwise a viewer, told they may not publish, could still cancel an editor's
schedule from the same page.
"""

from __future__ import annotations

from scheduling.domain.rights import offers
from scheduling.http.handlers.access import open_access, read_session_content
from scheduling.http.pages.wording import explain
from scheduling.http.refusals import Refusal
from scheduling.repository.schedules import Schedule
from scheduling.repository.sessions import Session
from scheduling.services import Services


async def require_cancel_right(services: Services, session: Session, schedule: Schedule) -> None:
    """A manage launch cancels any schedule; a content launch asks Dee Wan about the person."""
    if session.context_kind == "manage":
        return
    read = await read_session_content(services, await open_access(services, session))
    if not offers(read, schedule.kind, schedule.to_state):
        raise Refusal(403, "cancel_not_allowed", explain("cancel_not_allowed"))
