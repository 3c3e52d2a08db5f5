"""Create, try again, cancel and dismiss schedules from the management pages (session + CSRF),
and the page that asks before a cancel."""

from __future__ import annotations

from scheduling.actions.access import open_access
from scheduling.actions.cancel import cancel_schedule as cancel
from scheduling.actions.cancel import preview_cancel
from scheduling.actions.content_page import UNREADABLE, content_view, unread_view
from scheduling.actions.create import (
    Created,
    FormRefusal,
    FormValues,
    ScheduleRequest,
    shown_versions,
)
from scheduling.actions.create import create_schedule as create
from scheduling.actions.create import retry_schedule as retry
from scheduling.actions.dismiss import dismiss_schedule as dismiss
from scheduling.domain.pins import ShownVersions
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.listing_query import back_query, view_query
from scheduling.http.pages.cancel_page import cancel_page as confirmation
from scheduling.http.pages.content_page import KeptForm, content_page
from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.repository.sessions import Session
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
        return await _refused(services, refused)
    except Refusal as refused:
        form = FormValues(
            asked.transition.strip(),
            asked.local_time.strip(),
            asked.timezone.strip(),
            asked.fold.strip(),
        )
        kept = KeptForm(form, _pins(asked.version_id, asked.published_version_id))
        return await _unread(services, session, refused, kept)
    return _receipt(created)


async def retry_schedule(request: Request, services: Services) -> Response:
    """A refused schedule's Try again: a new schedule of its change, at the next minute."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    schedule_id = request.path_params["schedule_id"]
    try:
        created = await retry(services, session, schedule_id, *shown)
    except FormRefusal as refused:
        return await _refused(services, refused)
    except Refusal as refused:
        return await _unread(services, session, refused, KeptForm(None, _pins(*shown), schedule_id))
    return _receipt(created)


async def _refused(services: Services, refused: FormRefusal) -> Response:
    """The same page again, with what was entered and what was wrong with it."""
    view = await content_view(services, refused.access, refused.read)
    lateness = services.config.max_lateness_ms
    return page(content_page(view, lateness, refusal=refused), refused.status)


async def _unread(
    services: Services, session: Session, refused: Refusal, kept: KeptForm
) -> Response:
    """Dee Wan could not be read to judge the form: the page from the database, with the form
    as it was sent and the reason above it (503 while Dee Wan is down). Any other refusal is
    shown as it is."""
    if refused.code not in UNREADABLE:
        raise refused
    view = await unread_view(services, await open_access(services, session), refused)
    lateness = services.config.max_lateness_ms
    response = page(content_page(view, lateness, kept=kept), refused.status)
    response.headers.extend(refused.headers)
    return response


def _pins(version_id: str, published_version_id: str) -> ShownVersions | None:
    """The versions a posted form says its page showed, when it says them."""
    try:
        return shown_versions(version_id, published_version_id)
    except Refusal:
        return None


def _receipt(created: Created) -> Response:
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = f"&fold_ignored={created.fold_ignored}" if created.fold_ignored else ""
    receipt = f"?created={created.schedule_id}{ignored}"
    return redirect(f"/installations/{created.installation_id}{receipt}")


async def dismiss_schedule(request: Request, services: Services) -> Response:
    """A refused schedule leaves Needs attention; back to the view it was dismissed from."""
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await dismiss(services.db, services.clock.now_ms(), session, schedule_id)
    return redirect(f"/installations/{session.installation_id}?dismissed={schedule_id}{back}")


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
