"""The content page (a content launch): `GET /installations/{id}` shows it; its form creates a
schedule, and a refused schedule's Try again makes a new one (session + CSRF)."""

from __future__ import annotations

from scheduling.actions.access import open_access
from scheduling.actions.agent_access import page_agents
from scheduling.actions.create import (
    Created,
    FormRefusal,
    FormValues,
    ScheduleRequest,
    shown_versions,
)
from scheduling.actions.create import create_schedule as create
from scheduling.actions.create import retry_schedule as retry
from scheduling.domain.pins import ShownVersions
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post
from scheduling.http.html.render import page
from scheduling.http.listing_query import page_number
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.agents.agents_view import with_agents
from scheduling.pages.content.content_read import (
    UNREADABLE,
    content_view,
    show_content,
    unread_view,
)
from scheduling.pages.content.content_view import KeptForm, content_page
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
