"""The manage view (a manage launch): `GET /installations/{id}` shows it; a refused schedule is
dismissed from its Needs attention."""

from __future__ import annotations

from scheduling.actions.agent_access import page_agents
from scheduling.actions.dismiss import dismiss_schedule as dismiss
from scheduling.domain.secret_shapes import is_id
from scheduling.http.guards import require_form_post
from scheduling.http.html.render import page
from scheduling.http.listing_query import back_query, page_number, view_query
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.agents.agents_view import with_agents
from scheduling.pages.manage.manage_read import show_manage
from scheduling.pages.manage.manage_view import manage_page
from scheduling.repository.sessions import Session
from scheduling.services import Services


async def show(request: Request, services: Services, session: Session) -> Response:
    """The manage view for a session of a manage launch."""
    query = request.query
    shown = view_query(query).get("show", "all")
    only = query.get("schedule")
    view = await show_manage(
        services,
        session,
        group=None if shown == "all" else shown,
        page_number=page_number(query),
        cancelled=query.get("cancelled"),
        dismissed=query.get("dismissed"),
        only=only if only is not None and is_id(only) else None,
        # A secret or a notice waiting is shown by a GET only (a HEAD must not use it up).
        reveal=request.method == "GET",
    )
    model = manage_page(view, services.config.max_lateness_ms, query)
    return page(with_agents(model, session, await page_agents(services, session), None))


async def dismiss_schedule(request: Request, services: Services) -> Response:
    """A refused schedule leaves Needs attention; back to the view it was dismissed from."""
    session = await require_form_post(request, services)
    schedule_id = request.path_params["schedule_id"]
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form())
    await dismiss(services.db, services.clock.now_ms(), session, schedule_id)
    return redirect(f"/installations/{session.installation_id}?dismissed={schedule_id}{back}")
