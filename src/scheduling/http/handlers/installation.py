"""`GET /installations/{id}`: a launch from Dee Wan, then the content page or the manage view."""

from __future__ import annotations

from scheduling.actions.agent_access import page_agents
from scheduling.actions.content_page import show_content
from scheduling.actions.launch import launch
from scheduling.actions.manage_page import show_manage
from scheduling.domain.secret_shapes import is_id
from scheduling.http.guards import require_session, session_cookie
from scheduling.http.listing_query import page_number, view_query
from scheduling.http.pages.agents_page import with_agents
from scheduling.http.pages.content_page import content_page
from scheduling.http.pages.manage_page import manage_page
from scheduling.http.pages.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.repository.sessions import Session
from scheduling.services import Services


async def installation_page(request: Request, services: Services) -> Response:
    code = request.query.get("dee_wan_launch")
    # A HEAD (a link checker, a preview) must not use up the one-time code:
    # it is answered as the page itself, for whatever session it carries.
    if code is not None and request.method != "HEAD":
        return await _launch(request, services, code)
    session = await require_session(request, services)
    if session.context_kind == "manage":
        return await _manage(request, services, session)
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


async def _manage(request: Request, services: Services, session: Session) -> Response:
    query = request.query
    show = view_query(query).get("show", "all")
    only = query.get("schedule")
    view = await show_manage(
        services,
        session,
        group=None if show == "all" else show,
        page_number=page_number(query),
        cancelled=query.get("cancelled"),
        dismissed=query.get("dismissed"),
        only=only if only is not None and is_id(only) else None,
        # A secret or a notice waiting is shown by a GET only (a HEAD must not use it up).
        reveal=request.method == "GET",
    )
    model = manage_page(view, services.config.max_lateness_ms, query)
    return page(with_agents(model, session, await page_agents(services, session), None))


async def _launch(request: Request, services: Services, code: str) -> Response:
    """Exchange the launch code, set the session cookie, 303 to the page without the code."""
    installation_id = request.path_params["installation_id"]
    launched = await launch(services, installation_id, code, request.client)
    response = redirect(f"/installations/{launched.installation_id}")
    response.headers.append(("set-cookie", session_cookie(launched.session_id, launched.max_age_s)))
    return response
