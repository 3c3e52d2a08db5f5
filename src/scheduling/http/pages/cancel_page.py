"""The page that asks before a cancel: what would be cancelled (the change, the pinned version,
the time, the content), and the form that posts the cancel, coming back to the view it left."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlencode

from scheduling.actions.cancel import CancelPreview
from scheduling.http.pages.view_models import Moment, ScheduleCard, schedule_card
from scheduling.repository.sessions import Session


@dataclass(frozen=True)
class CancelPage:
    """The page asking to confirm a cancellation."""

    template: ClassVar[str] = "cancel.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    card: ScheduleCard
    content_title: str | None
    back: tuple[tuple[str, str], ...]  # the view's page, filter and zone, posted along
    back_href: str


def cancel_page(
    session: Session, preview: CancelPreview, back: Mapping[str, str], max_lateness_ms: int
) -> CancelPage:
    card = schedule_card(preview.schedule, Moment(preview.now_ms, max_lateness_ms))
    fields = tuple(sorted(back.items()))
    view = f"/installations/{session.installation_id}"
    return CancelPage(
        title="Cancel this schedule?",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        card=card,
        content_title=preview.title,
        back=fields,
        back_href=f"{view}?{urlencode(fields)}" if fields else view,
    )
