"""The small doors: `GET /`, the stylesheet, a launch from Dee Wan, the addresses a person lands
on by a GET although they take a POST, the manifest, and the operator's status and metrics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.access import launch
from scheduling.domain.protocol import build_manifest
from scheduling.domain.secrets import is_id
from scheduling.domain.wording import Refusal
from scheduling.http.html.render import page
from scheduling.http.html.styles import STYLES
from scheduling.http.requests import Request
from scheduling.http.responses import Response, exposition, json_response, redirect
from scheduling.http.routing import TAB, require_operator, require_session, session_cookie
from scheduling.operator.metrics import Family, read_metrics
from scheduling.operator.status import read_health, read_status
from scheduling.pages import content, manage
from scheduling.ports import Database
from scheduling.services import Services

# -- GET / -----------------------------------------------------------------------------------------

HOME = """{% extends "base.html" %}
{% block main %}
<h1>Scheduling for Dee Wan</h1>
<p>This service publishes or unpublishes a pinned version of a Dee Wan content item at a
time chosen in a time zone. It is a Dee Wan plugin: there is nothing to browse here.</p>
<h2>Where to go</h2>
<ul>
  <li>To schedule a change, open the content item in Dee Wan and press <strong>Schedule</strong>.</li>
  <li>To see every schedule of a site, a site admin opens <strong>Scheduling</strong> in Dee Wan's plugin menu.</li>
  <li>Operators: <code>GET /admin</code> shows the runner's last day and week (sign in with the operator secret); <code>GET /admin/status</code> and <code>GET /admin/metrics</code> take the operator's bearer token, and <code>GET /healthz</code> is for uptime monitors.</li>
{% if dev_origins %}
  <li>In development, the local Dee Wan:
  {% for origin in dev_origins %}<a href="{{ origin }}/">{{ origin }}</a>{% if not loop.last %}, {% endif %}{% endfor %}.</li>
{% endif %}
</ul>
{% endblock %}
"""


@dataclass(frozen=True)
class HomePage:
    """The page at `/`: what this service is."""

    template: ClassVar[str] = "home.html"

    title: str
    dev_origins: tuple[str, ...]  # the local Dee Wan's address helps a developer; none deployed
    person_name: str | None = None


async def home(request: Request, services: Services) -> Response:
    config = services.config
    dev_origins = config.dev_origins if config.is_development else ()
    return page(HomePage("Scheduling for Dee Wan", dev_origins))


# -- the stylesheet --------------------------------------------------------------------------------

_CSS = STYLES.encode()


async def stylesheet(request: Request, services: Services) -> Response:
    return Response(200, _CSS, [("content-type", "text/css; charset=utf-8")])


# -- ways back -------------------------------------------------------------------------------------


async def to_page(request: Request, services: Services) -> Response:
    installation_id = request.path_params["installation_id"]
    if not is_id(installation_id):
        raise Refusal(404, "not_found", "There is nothing at this address.")
    tab = request.query.get("tab", "")  # within its launch, when the address says which
    return redirect(
        f"/installations/{installation_id}" + (f"?tab={tab}" if TAB.fullmatch(tab) else "")
    )


async def favicon(request: Request, services: Services) -> Response:
    """No icon: a 204 the browser keeps, so the console shows no 404 on every page."""
    return Response(204, b"", [("cache-control", "public, max-age=86400")])


# -- a launch --------------------------------------------------------------------------------------


async def installation_page(request: Request, services: Services) -> Response:
    code = request.query.get("dee_wan_launch")
    # A HEAD (a link checker, a preview) must not use up the one-time code:
    # it is answered as the page itself, for whatever session it carries.
    if code is not None and request.method != "HEAD":
        return await _launch(request, services, code)
    session = await require_session(request, services)
    if session.context_kind == "manage":
        return await manage.show(request, services, session)
    return await content.show(request, services, session)


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


# -- the manifest ----------------------------------------------------------------------------------


async def manifest(request: Request, services: Services) -> Response:
    return json_response(build_manifest(services.config.public_origin))


# -- the operator's status, health and metrics -----------------------------------------------------


async def healthz(request: Request, services: Services) -> Response:
    """200 `{"status":"ok"}`, or 503 `{"status":"stalled"}` or `"code_behind_database"`:
    one statement, indexes only."""
    status = await read_health(services.db, services.clock.now_ms())
    return json_response({"status": status}, 200 if status == "ok" else 503)


async def metrics(
    request: Request,
    services: Services,
    more: Callable[[Database], Awaitable[list[Family]]] | None = None,
) -> Response:
    """The runner's families, then `more`'s (the agents' calls, which the app passes in)."""
    await require_operator(request, services)
    families = await read_metrics(services.db, services.clock.now_ms())
    extra = await more(services.db) if more is not None else []
    return exposition([*families, *extra])


async def runner_status(request: Request, services: Services) -> Response:
    await require_operator(request, services)
    return json_response(await read_status(services.db, services.clock.now_ms()))
