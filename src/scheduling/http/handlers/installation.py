"""`GET /installations/{id}` — the content page (form + its schedules) or the manage page."""

from __future__ import annotations

from typing import Any

from scheduling.dee_wan import ContentRead
from scheduling.domain.localtime import FOLDS, occurrence_labels, occurrences
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.domain.timezones import zone_names
from scheduling.http.guards import opened_for, require_session
from scheduling.http.handlers.access import Access, open_access, read_session_content
from scheduling.http.handlers.launch import launch
from scheduling.http.handlers.manage import manage_view
from scheduling.http.pages import time_labels
from scheduling.http.pages.render import page
from scheduling.http.pages.view_models import Moment, cards, schedule_view
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.repository import schedules
from scheduling.services import Services


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
        return await manage_view(request, services, access)
    read = await read_session_content(services, access)
    return await content_page(
        services,
        access,
        read,
        created=request.query.get("created"),
        cancelled=request.query.get("cancelled"),
        fold_ignored=request.query.get("fold_ignored"),
    )


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
    fold_ignored: str | None = None,
) -> Response:
    installation_id = access.installation.id
    rows = await schedules.list_for(services.db, installation_id, read.content.primary_id)
    now_ms = services.clock.now_ms()
    moment = Moment(now_ms, services.config.max_lateness_ms)
    views = cards(rows, moment, context_kind="content", reads={read.content.primary_id: read})
    notice = None
    made = next((s for s in rows if s.id == created), None) if created else None
    if made is not None and made.status == Status.PENDING:
        replaced = any(
            s.kind == made.kind
            and s.revision == made.revision - 1
            and s.status == Status.SUPERSEDED
            for s in rows
        )
        notice = {**schedule_view(made, moment), "superseded": replaced}
    choices = transition_choices(read)
    # After a create, offer the zone just used rather than the site's again.
    zone = made.timezone if made is not None else read.site.timezone
    defaults = {
        "transition": next((c["value"] for c in choices if not c["disabled"]), ""),
        "local_time": time_labels.suggested_local_time(zone, now_ms),
        "timezone": zone,
        "fold": "",
    }
    shown = {**defaults, **(form or {})}
    now_zone = (
        shown["timezone"] if time_labels.known_zone(shown["timezone"]) else read.site.timezone
    )
    fold_choices = occurrences(shown["local_time"], shown["timezone"])
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
        form=shown,
        error=error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=time_labels.now_in(now_zone, now_ms),
        chosen_now=time_labels.now_in(shown["timezone"], now_ms) if error else None,
        fold_choices=occurrence_labels(*fold_choices) if fold_choices else None,
        focus_fold=bool(error and error["code"] == "ambiguous_local_time" and fold_choices),
        flash="The schedule was cancelled." if cancelled and is_id(cancelled) else None,
        stale=[v for v in views if v["stale"]],
        schedules=views,
        card_page={
            "installation_id": installation_id,
            "csrf_token": access.session.csrf_token,
            "opened_for": opened_for(access.session),
            "context_kind": "content",
            "content": read.content,
            "show_content": False,
            "viewer_zone": None,
            "back": [],
        },
    )
