"""Notification endpoints from the manage page (session + CSRF, manage launch only): add,
rotate its secret, delete, send a test event; send a delivery again, replay an endpoint's
failures, enable a disabled one; and the pages that ask before a rotation or a delete."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

from scheduling.actions import notifications
from scheduling.actions import send_again as again
from scheduling.actions.notifications import EndpointForm, EndpointFormRefusal
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import page
from scheduling.http.listing_query import view_query
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.manage.manage_page import manage_page
from scheduling.pages.manage.manage_read import show_manage
from scheduling.pages.notifications.notifications_view import endpoint_confirm_page
from scheduling.services import Services


async def add_endpoint(request: Request, services: Services) -> Response:
    """A new endpoint; a refused form comes back on the manage page (`add_again`)."""
    session = await require_form_post(request, services)
    await notifications.add_endpoint(services, session, _posted(request.form_lists()))
    return _back(session.installation_id)


async def add_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """The manage page again, with what was entered and what was wrong with it (`App.handle`
    calls it), for the session the refusal carries; any other refusal is shown as it is."""
    if not isinstance(refused, EndpointFormRefusal):
        return None
    view = await show_manage(services, refused.session, group=None, page_number=1, refused=refused)
    return page(manage_page(view, services.config.max_lateness_ms, {}), refused.status)


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
    return _back(session.installation_id, request)


async def delete_endpoint(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await notifications.delete_endpoint(services, session, request.path_params["endpoint_id"])
    return _back(session.installation_id, request)


async def send_test(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await notifications.send_test(services, session, request.path_params["endpoint_id"])
    return _back(session.installation_id)


async def send_again(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    params = request.path_params
    await again.send_again(services, session, params["endpoint_id"], params["delivery_id"])
    return _back(session.installation_id, request)


async def replay_failures(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    since_hours = request.form_lists().get("since_hours", [""])[0]
    endpoint_id = request.path_params["endpoint_id"]
    await again.replay_failures(services, session, endpoint_id, since_hours)
    return _back(session.installation_id, request)


async def enable_endpoint(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await again.enable_endpoint(services, session, request.path_params["endpoint_id"])
    return _back(session.installation_id, request)


def _posted(fields: dict[str, list[str]]) -> EndpointForm:
    """The endpoint form as the browser posted it: without a kind, the default kind."""
    form = EndpointForm(
        url=fields.get("url", [""])[0].strip(), events=tuple(fields.get("events", ()))
    )
    return replace(form, kind=fields["kind"][0]) if "kind" in fields else form


def _back(installation_id: str, request: Request | None = None) -> Response:
    """Back to the Notifications section, in the zone the form came from."""
    zone = view_query(request.form()).get("zone") if request is not None else None
    query = f"?{urlencode({'zone': zone})}" if zone else ""
    return redirect(f"/installations/{installation_id}{query}#notifications")
