"""`GET /installations/{id}`: a launch from Dee Wan, then the page its session was opened for,
the content page (`content/`) or the manage view (`manage/`)."""

from __future__ import annotations

from scheduling.actions.launch import launch
from scheduling.http.guards import require_session, session_cookie
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.content import content_page
from scheduling.pages.manage import manage_page
from scheduling.services import Services


async def installation_page(request: Request, services: Services) -> Response:
    code = request.query.get("dee_wan_launch")
    # A HEAD (a link checker, a preview) must not use up the one-time code:
    # it is answered as the page itself, for whatever session it carries.
    if code is not None and request.method != "HEAD":
        return await _launch(request, services, code)
    session = await require_session(request, services)
    if session.context_kind == "manage":
        return await manage_page.show(request, services, session)
    return await content_page.show(request, services, session)


async def _launch(request: Request, services: Services, code: str) -> Response:
    """Exchange the launch code, set the session's cookies (the latest launch's, and its own
    tab's), 303 to its page without the code."""
    installation_id = request.path_params["installation_id"]
    launched = await launch(services, installation_id, code, request.client)
    response = redirect(f"/installations/{launched.installation_id}?tab={launched.tab}")
    for tab in (None, launched.tab):
        cookie = session_cookie(launched.session_id, launched.max_age_s, tab)
        response.headers.append(("set-cookie", cookie))
    return response
