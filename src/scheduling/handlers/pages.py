"""`GET /installations/{id}` — the content page (form + its schedules) or the manage page."""

from __future__ import annotations

from typing import Any

from ..dee_wan import ContentRead
from ..repository import schedules
from ..requests import Request
from ..responses import Response
from ..secret_shapes import is_id
from ..services import Services
from ..timezones import zone_names
from ..web.guards import opened_for, require_session
from ..web.pages import page
from ..web.view_models import schedule_view
from .access import Access, open_access, read_session_content
from .launch import launch


async def installation_page(request: Request, services: Services) -> Response:
    code = request.query.get("dee_wan_launch")
    # A HEAD (a link checker, a preview) must not use up the one-time code:
    # it is answered as the page itself, for whatever session it carries.
    if code is not None and request.method != "HEAD":
        return await launch(request, services, code)
    installation_id = request.path_params["installation_id"]
    session = await require_session(request, services, installation_id)
    access = await open_access(services, session)
    if session.context_kind == "manage":
        return await manage_page(services, access, notice=_notice(request))
    read = await read_session_content(services, access)
    return await content_page(
        services,
        access,
        read,
        created=request.query.get("created"),
        cancelled=request.query.get("cancelled"),
    )


def _notice(request: Request) -> str | None:
    return "The schedule was cancelled." if is_id(request.query.get("cancelled")) else None


def transition_choices(read: ContentRead) -> list[dict[str, Any]]:
    choices = []
    for t in read.workflow.transitions:
        if t.kind == "publish":
            label = f"Publish version {read.content.current_version_id}"
            disabled = False
        else:
            published = read.content.published_version_id
            label = (
                f"Unpublish published version {published}"
                if published
                else "Unpublish (nothing is published)"
            )
            disabled = published is None
        choices.append({"value": f"{t.kind}:{t.to}", "label": label, "disabled": disabled})
    return choices


async def content_page(
    services: Services,
    access: Access,
    read: ContentRead,
    *,
    status: int = 200,
    form: dict[str, str] | None = None,
    error: dict[str, str] | None = None,
    created: str | None = None,
    cancelled: str | None = None,
) -> Response:
    installation_id = access.installation.id
    rows = await schedules.list_for(services.db, installation_id, read.content.primary_id)
    views = [schedule_view(s) for s in rows]
    notice = None
    made = next((s for s in rows if s.id == created), None) if created else None
    if made is not None and made.status == "pending":
        replaced = any(
            s.kind == made.kind and s.revision == made.revision - 1 and s.status == "superseded"
            for s in rows
        )
        notice = {**schedule_view(made), "superseded": replaced}
    choices = transition_choices(read)
    defaults = {
        "transition": next((c["value"] for c in choices if not c["disabled"]), ""),
        "local_time": "",
        # After a create, offer the zone just used rather than the site's again.
        "timezone": made.timezone if made is not None else read.site.timezone,
        "fold": "",
    }
    return page(
        "content.html",
        status,
        title=f"Schedule {read.content.title}",
        person_name=access.session.person_name,
        installation_id=installation_id,
        csrf_token=access.session.csrf_token,
        opened_for=opened_for(access.session),
        content=read.content,
        site_timezone=read.site.timezone,
        zones=sorted(zone_names()),
        choices=choices,
        form={**defaults, **(form or {})},
        error=error,
        notice=notice,
        flash="The schedule was cancelled." if cancelled and is_id(cancelled) else None,
        schedules=views,
    )


async def manage_page(services: Services, access: Access, *, notice: str | None = None) -> Response:
    rows = await schedules.list_for(services.db, access.installation.id)
    return page(
        "manage.html",
        title="All schedules",
        person_name=access.session.person_name,
        installation_id=access.installation.id,
        csrf_token=access.session.csrf_token,
        opened_for=opened_for(access.session),
        schedules=[schedule_view(s) for s in rows],
        flash=notice,
    )
