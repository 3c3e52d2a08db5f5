"""Cancel a schedule from the content page or the manage view (session + CSRF), and the page
that asks first: what would be cancelled (the change, the pinned version, the time, the
content), and the form that posts the cancel, coming back to the view it left."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.cancel import CancelPreview, preview_cancel
from scheduling.actions.cancel import cancel_schedule as cancel
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.html.view_models import Moment, ScheduleCard, schedule_card
from scheduling.http.listing_query import back_query, view_query
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.repository.sessions import Session
from scheduling.services import Services


@dataclass(frozen=True)
class CancelPage:
    """The page asking to confirm a cancellation."""

    template: ClassVar[str] = "cancel.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    tab: str | None
    card: ScheduleCard
    content_title: str | None
    back: tuple[tuple[str, str], ...]  # the view's page, filter and zone, posted along
    back_href: str
    rooms: tuple[Room, ...]


def confirmation(
    session: Session, preview: CancelPreview, back: Mapping[str, str], max_lateness_ms: int
) -> CancelPage:
    card = schedule_card(preview.schedule, Moment(preview.now_ms, max_lateness_ms))
    fields = tuple(sorted(back.items()))
    return CancelPage(
        title="Cancel this schedule?",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        tab=session.tab,
        card=card,
        content_title=preview.title,
        back=fields,
        back_href=session.href(query=fields),
        rooms=rooms(session, "schedules"),
    )


async def cancel_page(request: Request, services: Services) -> Response:
    """`GET …/schedules/:id/cancel`: what the cancel would end, and the form that posts it."""
    session = await require_session(request, services)
    preview = await preview_cancel(services, session, request.path_params["schedule_id"])
    back = view_query(request.query)
    return page(confirmation(session, preview, back, services.config.max_lateness_ms))


async def cancel_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await cancel(services, session, schedule_id)
    return redirect(session.href(query=[("cancelled", schedule_id), *back]))
