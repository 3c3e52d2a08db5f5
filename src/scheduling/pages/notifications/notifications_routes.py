"""The notifications page (a manage launch's) and its forms (session + CSRF): add an endpoint,
rotate its secret, delete, send a test event; send a delivery again, replay an endpoint's
failures, enable a disabled one; and the pages that ask before a rotation or a delete."""

from __future__ import annotations

from dataclasses import replace

from scheduling.actions import notifications
from scheduling.actions import send_again as again
from scheduling.actions.access import open_access
from scheduling.actions.notifications import EndpointForm, EndpointFormRefusal
from scheduling.actions.titles import read_titles
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import page, rooms
from scheduling.http.html.view_models import card_page
from scheduling.http.listing_query import view_query
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.manage.manage_read import TITLES_BUDGET_S, site_zone
from scheduling.pages.notifications.notifications_view import (
    Lines,
    NotificationsPage,
    endpoint_confirm_page,
    notifications_section,
)
from scheduling.repository import sessions
from scheduling.repository.sessions import Session
from scheduling.services import Services


async def page_of(request: Request, services: Services) -> Response:
    """`GET …/notifications`: the endpoints, in the zone asked for (else the site's)."""
    session = await require_session(request, services)
    zone = view_query(request.query).get("zone")
    # A secret or a notice waiting is shown by a GET only (a HEAD must not use it up).
    return await _page(services, session, zone, reveal=request.method == "GET")


async def _page(
    services: Services,
    session: Session,
    zone: str | None,
    *,
    reveal: bool = False,
    refused: EndpointFormRefusal | None = None,
) -> Response:
    view = await notifications.notifications_view(services, session, reveal=reveal, refused=refused)
    access = await open_access(services, session)
    titles = await read_titles(services, access, view.content_ids, budget_s=TITLES_BUDGET_S)
    zone = zone or site_zone(titles)[0]
    lines = Lines(zone, services.clock.now_ms(), titles, session)
    model = NotificationsPage(
        title="Notifications",
        person_name=session.person_name,
        installation_id=session.installation_id,
        card_page=card_page(session, viewer_zone=zone),
        zone=zone,
        notifications=notifications_section(view, lines),
        notice=await sessions.take_notice(services.db, session) if reveal else None,
        rooms=rooms(session, "notifications"),
        dee_wan_href=access.installation.base_url,
    )
    return page(model, refused.status if refused else 200)


async def add_endpoint(request: Request, services: Services) -> Response:
    """A new endpoint; a refused form comes back on the notifications page (`add_again`)."""
    session = await require_form_post(request, services)
    await notifications.add_endpoint(services, session, _posted(request.form_lists()))
    return _back(session)


async def add_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """The notifications page again, with what was entered and what was wrong with it
    (`App.handle` calls it), for the session the refusal carries; any other refusal is shown
    as it is."""
    if not isinstance(refused, EndpointFormRefusal):
        return None
    return await _page(services, refused.session, None, refused=refused)


async def confirm_rotate(request: Request, services: Services) -> Response:
    """`GET …/notifications/:id/rotate`: what a rotation changes, and the form that posts it."""
    return await _confirm(request, services, "rotate")


async def confirm_delete(request: Request, services: Services) -> Response:
    """`GET …/notifications/:id/delete`: what a delete loses, and the form that posts it."""
    return await _confirm(request, services, "delete")


async def _confirm(request: Request, services: Services, action: str) -> Response:
    session = await require_session(request, services)
    preview = await notifications.preview_endpoint(
        services, session, request.path_params["endpoint_id"]
    )
    zone = view_query(request.query).get("zone", "UTC")
    return page(endpoint_confirm_page(session, preview, action, zone))


async def rotate_secret(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await notifications.rotate_secret(services, session, request.path_params["endpoint_id"])
    return _back(session, request)


async def delete_endpoint(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await notifications.delete_endpoint(services, session, request.path_params["endpoint_id"])
    return _back(session, request)


async def send_test(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await notifications.send_test(services, session, request.path_params["endpoint_id"])
    return _back(session)


async def send_again(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    params = request.path_params
    await again.send_again(services, session, params["endpoint_id"], params["delivery_id"])
    return _back(session, request)


async def replay_failures(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    since_hours = request.form_lists().get("since_hours", [""])[0]
    endpoint_id = request.path_params["endpoint_id"]
    await again.replay_failures(services, session, endpoint_id, since_hours)
    return _back(session, request)


async def enable_endpoint(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await again.enable_endpoint(services, session, request.path_params["endpoint_id"])
    return _back(session, request)


def _posted(fields: dict[str, list[str]]) -> EndpointForm:
    """The endpoint form as the browser posted it: without a kind, the default kind."""
    form = EndpointForm(
        url=fields.get("url", [""])[0].strip(), events=tuple(fields.get("events", ()))
    )
    return replace(form, kind=fields["kind"][0]) if "kind" in fields else form


def _back(session: Session, request: Request | None = None) -> Response:
    """Back to the notifications page, in the zone the form came from."""
    zone = view_query(request.form()).get("zone") if request is not None else None
    return redirect(session.href("/notifications", [("zone", zone)] if zone else ()))
