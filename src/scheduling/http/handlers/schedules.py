"""Create and cancel schedules from the management pages (session + CSRF), and the page that
asks before a cancel."""

from __future__ import annotations

from scheduling.actions.cancel import cancel_schedule as cancel
from scheduling.actions.cancel import preview_cancel
from scheduling.actions.content_page import content_view
from scheduling.actions.create import FormRefusal, ScheduleRequest
from scheduling.actions.create import create_schedule as create
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.listing_query import back_query, view_query
from scheduling.http.pages.cancel_page import cancel_page as confirmation
from scheduling.http.pages.content_page import content_page
from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.services import Services


async def create_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    fields = request.form()
    asked = ScheduleRequest(
        version_id=fields.get("version_id", ""),
        published_version_id=fields.get("published_version_id", ""),
        transition=fields.get("transition", ""),
        local_time=fields.get("local_time", ""),
        timezone=fields.get("timezone", ""),
        fold=fields.get("fold", ""),
        repin_of=fields.get("repin_of"),
    )
    try:
        created = await create(services, session, asked)
    except FormRefusal as refused:
        # The same page again, with what was entered and what was wrong with it.
        view = await content_view(services, refused.access, refused.read)
        lateness = services.config.max_lateness_ms
        return page(content_page(view, lateness, refusal=refused), refused.status)
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = f"&fold_ignored={created.fold_ignored}" if created.fold_ignored else ""
    receipt = f"?created={created.schedule_id}{ignored}"
    return redirect(f"/installations/{created.installation_id}{receipt}")


async def cancel_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await cancel(services, session, schedule_id)
    return redirect(f"/installations/{session.installation_id}?cancelled={schedule_id}{back}")


async def cancel_page(request: Request, services: Services) -> Response:
    """`GET …/schedules/:id/cancel`: what the cancel would end, and the form that posts it."""
    session = await require_session(request, services)
    preview = await preview_cancel(services, session, request.path_params["schedule_id"])
    back = view_query(request.query)
    return page(confirmation(session, preview, back, services.config.max_lateness_ms))
