"""The content page (a content launch): `GET /installations/{id}` shows it; its form creates a
schedule, and a refused schedule's Try again makes a new one (session + CSRF). A refused form
comes back on the page (`form_again`, which `App.handle` calls)."""

from __future__ import annotations

from scheduling.actions.access import open_access
from scheduling.actions.agent_access import page_agents
from scheduling.actions.create import Created, FormRefusal, ScheduleForm, posted_versions
from scheduling.actions.create import create_schedule as create
from scheduling.actions.create import retry_schedule as retry
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import page
from scheduling.http.listing_query import page_number
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.agents.agents_view import with_agents
from scheduling.pages.content.content_form import KeptForm
from scheduling.pages.content.content_read import (
    UNREADABLE,
    content_view,
    show_content,
    unread_view,
)
from scheduling.pages.content.content_view import content_page
from scheduling.repository.sessions import Session
from scheduling.services import Services


async def show(request: Request, services: Services, session: Session) -> Response:
    """The content page for a session of a content launch."""
    query = request.query
    shown = await show_content(
        services,
        session,
        page_number=page_number(query),
        created=query.get("created"),
        cancelled=query.get("cancelled"),
    )
    lateness = services.config.max_lateness_ms
    model = content_page(shown, lateness, fold_ignored=query.get("fold_ignored"))
    agents = await page_agents(services, session)
    return page(with_agents(model, session, agents, model.pins, shown.live))


async def create_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    return _receipt(await create(services, session, ScheduleForm.posted(request.form())))


async def retry_schedule(request: Request, services: Services) -> Response:
    """A refused schedule's Try again: a new schedule of its change, at the next minute."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await retry(services, session, request.path_params["schedule_id"], *shown)
    return _receipt(created)


async def form_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A refused create or Try again: the same page again, with what was entered and what was
    wrong with it. When Dee Wan could not be read to judge the form, the page from the
    database, with the form as it was sent and the reason above it (503 while Dee Wan is
    down). Any other refusal is shown as it is (None)."""
    if isinstance(refused, FormRefusal):
        return await refused_form(services, refused)
    if refused.code not in UNREADABLE:
        return None
    fields = request.form()
    pins = posted_versions(fields.get("version_id", ""), fields.get("published_version_id", ""))
    schedule_id = request.path_params.get("schedule_id")
    if schedule_id is not None:  # a Try again: its button comes back
        kept = KeptForm(None, pins, schedule_id)
    else:
        kept = KeptForm(ScheduleForm.posted(fields).as_entered(), pins)
    access = await open_access(services, await require_session(request, services))
    view = await unread_view(services, access, refused)
    lateness = services.config.max_lateness_ms
    response = page(content_page(view, lateness, kept=kept), refused.status)
    response.headers.extend(refused.headers)
    return response


async def refused_form(services: Services, refused: FormRefusal) -> Response:
    """The content page again, with the form as entered and what was wrong with it."""
    view = await content_view(services, refused.access, refused.read)
    lateness = services.config.max_lateness_ms
    return page(content_page(view, lateness, refusal=refused), refused.status)


def _receipt(created: Created) -> Response:
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = f"&fold_ignored={created.fold_ignored}" if created.fold_ignored else ""
    receipt = f"?created={created.schedule_id}{ignored}"
    return redirect(f"/installations/{created.installation_id}{receipt}")
