"""Agent keys minted, shown once and revoked from a page; proposals confirmed or declined
there."""

from __future__ import annotations

from scheduling.actions.agent_access import mint_key, revoke_key
from scheduling.actions.agents_propose import confirm, decline
from scheduling.actions.create import FormRefusal
from scheduling.http.guards import require_form_post
from scheduling.http.html.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.agents.agents_view import agent_key_page
from scheduling.pages.content.content_read import content_view
from scheduling.pages.content.content_view import content_page
from scheduling.services import Services


async def mint(request: Request, services: Services) -> Response:
    """A new key, shown on its own page this once (its hash alone is kept)."""
    session = await require_form_post(request, services)
    fields = request.form()
    minted = await mint_key(services, session, fields.get("name", ""), fields.get("days", ""))
    origin = services.config.public_origin
    model = agent_key_page(session, minted.key.name, minted.key.expires_at, minted.secret, origin)
    return page(model, 201)


async def revoke(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await revoke_key(services, session, request.path_params["key_id"])
    return redirect(f"/installations/{session.installation_id}?revoked=1")


async def confirm_proposal(request: Request, services: Services) -> Response:
    """The ordinary create, pinned to what the page showed; refused as a form would be."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    try:
        created = await confirm(services, session, request.path_params["proposal_id"], *shown)
    except FormRefusal as refused:
        view = await content_view(services, refused.access, refused.read)
        model = content_page(view, services.config.max_lateness_ms, refusal=refused)
        return page(model, refused.status)
    return redirect(f"/installations/{created.installation_id}?created={created.schedule_id}")


async def decline_proposal(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await decline(services, session, request.path_params["proposal_id"])
    return redirect(f"/installations/{session.installation_id}?declined=1")
