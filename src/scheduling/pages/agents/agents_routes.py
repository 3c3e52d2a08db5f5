"""Agent keys minted, shown once and revoked from a page; proposals confirmed or declined
there."""

from __future__ import annotations

from scheduling.actions.agent_access import mint_key, revoke_key
from scheduling.actions.agents_propose import confirm, decline
from scheduling.actions.create import FormRefusal
from scheduling.domain.refusals import Refusal
from scheduling.http.guards import require_form_post
from scheduling.http.html.render import page
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.agents.agents_view import agent_key_page
from scheduling.pages.content.content_routes import refused_form
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
    """The ordinary create, pinned to what the page showed; refused as a form would be
    (`confirm_again`)."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await confirm(services, session, request.path_params["proposal_id"], *shown)
    return redirect(f"/installations/{created.installation_id}?created={created.schedule_id}")


async def confirm_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A confirm refused on its form: the content page again, with the form as the proposal
    filled it and why (`App.handle` calls it); any other refusal is shown as it is."""
    return await refused_form(services, refused) if isinstance(refused, FormRefusal) else None


async def decline_proposal(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    await decline(services, session, request.path_params["proposal_id"])
    return redirect(f"/installations/{session.installation_id}?declined=1")
