"""The application: a route table (one entry a route, each handled in its page's room under
`pages/`), the one place refusals are rendered (a refused form as its page again, through its
route's `again`), and the runner's invocations (the cron's tick, a clock's alarm)."""

from __future__ import annotations

import importlib
from collections.abc import Coroutine
from typing import Any

from scheduling.config import Misconfigured
from scheduling.domain.wording import Refusal, invalid_request
from scheduling.http.html.render import refusal_page
from scheduling.http.next_steps import NextSteps, local_steps, next_steps
from scheduling.http.requests import MAX_BODY_BYTES, Request
from scheduling.http.responses import Response, error_response
from scheduling.http.routing import Handler, Route, Router
from scheduling.pages import agents, home, release
from scheduling.pages.calendar import calendar, make_feed, revoke_feed
from scheduling.pages.cancel import cancel_page, cancel_schedule
from scheduling.pages.content import confirm_again, create_schedule, form_again, retry_schedule
from scheduling.pages.manage import (
    add_again,
    add_endpoint,
    confirm_delete,
    confirm_rotate,
    delete_endpoint,
    dismiss_schedule,
    enable_endpoint,
    page_of,
    replay_failures,
    rotate_secret,
    send_again,
    send_test,
)
from scheduling.runner.alarm import alarm
from scheduling.runner.tick import Ticks
from scheduling.services import Services, log


# Rare routes, whose modules (an activation's model, the operator page's charts and queries,
# the deletion, a calendar client's feed, the agents' MCP endpoint) are imported by their own
# first request: out of the Worker's startup, and never an editor's page. Every other route's
# modules are imported here.
def _later(module: str, name: str) -> Handler:
    async def handler(request: Request, services: Services) -> Response:
        found: Handler = getattr(importlib.import_module(module), name)
        return await found(request, services)

    return handler


_activate = _later("scheduling.pages.activation", "activate")


async def _metrics(request: Request, services: Services) -> Response:
    # The agents' series name every MCP tool: the MCP package waits for the first scrape (or
    # the first agent call), out of the Worker's startup.
    from scheduling.mcp.tools import agent_call_families

    return await home.metrics(request, services, more=agent_call_families)


INSTALLATION = "/installations/{installation_id}"
SCHEDULE = INSTALLATION + "/schedules/{schedule_id}"
ENDPOINT = INSTALLATION + "/notifications/{endpoint_id}"

ROUTES = [
    Route("GET", "/", home.home),
    Route("GET", "/dee-wan/manifest.json", home.manifest),
    Route("POST", "/dee-wan/activate", _activate),
    Route("POST", "/admin/activation-codes", _later("scheduling.pages.activation", "mint")),
    Route(
        "POST",
        "/admin/installations/{installation_id}/delete-data",
        _later("scheduling.pages.operator", "delete_data"),
    ),
    Route("GET", "/admin", _later("scheduling.pages.operator", "operator")),
    Route("GET", "/admin/status", home.runner_status),
    Route("GET", "/admin/metrics", _metrics),
    Route("GET", "/healthz", home.healthz),
    Route("GET", INSTALLATION, home.installation_page),
    Route("POST", INSTALLATION + "/schedules", create_schedule, form_again),
    # A reloaded or restored refused form: back to the page, never a 405.
    Route("GET", INSTALLATION + "/schedules", home.to_page),
    Route("GET", SCHEDULE + "/retry", home.to_page),
    Route("GET", SCHEDULE + "/dismiss", home.to_page),
    Route("GET", INSTALLATION + "/notifications", page_of),
    Route("GET", INSTALLATION + "/agents", agents.agents_room),
    Route("GET", INSTALLATION + "/releases", release.releases_room),
    Route("GET", INSTALLATION + "/calendar", calendar),
    Route("POST", INSTALLATION + "/calendar/feed", make_feed),
    Route("GET", INSTALLATION + "/calendar/feed", home.to_page),
    Route("POST", INSTALLATION + "/calendar/feed/revoke", revoke_feed),
    Route("GET", "/calendar-feeds/{token}.ics", _later("scheduling.pages.calendar_feed", "feed")),
    Route("GET", SCHEDULE + "/cancel", cancel_page),
    Route("POST", SCHEDULE + "/cancel", cancel_schedule),
    Route("POST", SCHEDULE + "/retry", retry_schedule, form_again),
    Route("POST", SCHEDULE + "/dismiss", dismiss_schedule),
    Route("POST", INSTALLATION + "/notifications", add_endpoint, add_again),
    Route("GET", ENDPOINT + "/rotate", confirm_rotate),
    Route("POST", ENDPOINT + "/rotate", rotate_secret),
    Route("GET", ENDPOINT + "/delete", confirm_delete),
    Route("POST", ENDPOINT + "/delete", delete_endpoint),
    Route("POST", ENDPOINT + "/test", send_test),
    Route("POST", ENDPOINT + "/deliveries/{delivery_id}/send-again", send_again),
    Route("POST", ENDPOINT + "/replay", replay_failures),
    Route("POST", ENDPOINT + "/enable", enable_endpoint),
    Route("GET", "/static/app.css", home.stylesheet),
    Route("POST", INSTALLATION + "/agent-keys", agents.mint),
    Route("POST", INSTALLATION + "/agent-keys/{key_id}/revoke", agents.revoke),
    Route(
        "POST",
        INSTALLATION + "/proposals/{proposal_id}/confirm",
        agents.confirm_proposal,
        confirm_again,
    ),
    Route("POST", INSTALLATION + "/proposals/{proposal_id}/decline", agents.decline_proposal),
    Route("GET", INSTALLATION + "/releases/{release_id}", release.release_page),
    Route(
        "POST",
        INSTALLATION + "/releases/{release_id}/{action}",
        release.release_action,
        release.again,
    ),
    Route("POST", SCHEDULE + "/move", release.move_schedule, form_again),
    Route("POST", SCHEDULE + "/send-now", release.send_now, form_again),
    Route("POST", "/mcp", _later("scheduling.mcp.endpoint", "mcp")),
    Route("GET", "/favicon.ico", home.favicon),
]

# Dee Wan core and the operator read JSON; people read pages.
_MACHINE_PREFIXES = ("/dee-wan/", "/admin/", "/mcp", "/calendar-feeds/")
_PAGE_PREFIXES = ("/installations/", "/static/")


def wants_page(request: Request) -> bool:
    """Whether a refusal is shown as a page: on the browser routes, or when a browser asks."""
    path = request.path
    if path.startswith(_MACHINE_PREFIXES):
        return False
    if path.startswith(_PAGE_PREFIXES):
        return True
    return "text/html" in request.headers.get("accept", "")


def render_refusal(request: Request, refusal: Refusal, steps: NextSteps | None = None) -> Response:
    """`steps`: where the page leads (`next_steps`); what the request tells when not given."""
    if wants_page(request):
        response = refusal_page(refusal, steps or local_steps(request, refusal), request.path)
    else:
        response = error_response(refusal.status, refusal.code, refusal.message)
    response.headers.extend(refusal.headers)
    return response


def _finish(request: Request, response: Response, *, https: bool) -> Response:
    if request.method == "HEAD":
        response.without_body()
    return response.with_base_headers(https=https)


# Its patterns compiled once, at import: in a Worker's memory snapshot, not in the isolate's
# first request.
ROUTER = Router(ROUTES)


class App:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.router = ROUTER
        self.ticks = Ticks(services)

    async def handle(self, request: Request) -> Response:
        try:
            response = await self._dispatch(request)
        except Refusal as refusal:
            steps = (
                await next_steps(request, self.services, refusal) if wants_page(request) else None
            )
            response = render_refusal(request, refusal, steps)
        except Misconfigured as exc:
            # The variable's name only: its value may be a secret.
            log.error("misconfigured: %s %s", exc.name, exc.reason)
            response = render_refusal(
                request,
                Refusal(500, "misconfigured", f"{exc.name} is not configured correctly"),
            )
        except Exception:
            log.exception("unhandled error in %s %s", request.method, request.path)
            response = render_refusal(
                request,
                Refusal(500, "internal_error", "Something went wrong in Scheduling."),
            )
        return _finish(request, response, https=self.services.config.is_https)

    def render(self, request: Request, refusal: Refusal) -> Response:
        """A refusal decided outside the route table (by a runtime's adapter), rendered the same way."""
        return _finish(
            request, render_refusal(request, refusal), https=self.services.config.is_https
        )

    async def _dispatch(self, request: Request) -> Response:
        if len(request.body) > MAX_BODY_BYTES:
            raise invalid_request(f"The body is larger than {MAX_BODY_BYTES} bytes.")
        route = self.router.route(request)
        try:
            return await route.handler(request, self.services)
        except Refusal as refused:
            # A refused form: its page again, with what was entered and why, when its route
            # shows it (`Route.again`); any other refusal is rendered by `handle`.
            again = await route.again(request, self.services, refused) if route.again else None
            if again is None:
                raise
            return again

    async def tick(self, scheduled_time: int) -> dict[str, int]:
        """One runner tick for the cron invocation of `scheduled_time` (`runner.tick.tick`)."""
        return await self.ticks.cron(scheduled_time)

    def after_request(self) -> Coroutine[Any, Any, None] | None:
        """What a runtime runs once a request is answered: the cron's backstop when the cron
        has stopped (`runner.tick.Ticks`); None nearly always."""
        return self.ticks.after_request()

    async def alarm(self, installation_id: str, set_for: int | None = None) -> int | None:
        """One alarm of an installation's clock (`runner.alarm.alarm`)."""
        return await alarm(self.services, installation_id, set_for)
