"""Create and cancel schedules from the management pages (session + CSRF)."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduling.domain.localtime import TimeRefusal, resolve_local_time
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.http.guards import require_same_origin_post, require_session
from scheduling.http.handlers.access import open_access, read_session_content
from scheduling.http.handlers.cancel_rules import require_cancel_right
from scheduling.http.handlers.installation import content_page
from scheduling.http.handlers.manage import back_query
from scheduling.http.handlers.pinning import changed_since_shown, repin_form, shown_versions
from scheduling.http.pages.wording import explain
from scheduling.http.refusals import Refusal
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.repository import schedules
from scheduling.repository.schedules import NewSchedule, RunningConflict
from scheduling.services import Services, log

FORM_FIELDS = ("transition", "local_time", "timezone", "fold")
# Which form field each refusal belongs to, so the page can point at it.
ERROR_FIELD = {
    "invalid_local_time": "local_time",
    "nonexistent_local_time": "local_time",
    "past_time": "local_time",
    "ambiguous_local_time": "fold",
    "invalid_fold": "fold",
    "unknown_timezone": "timezone",
    "transition_not_allowed": "transition",
    "nothing_published": "transition",
    "execution_in_progress": "transition",
    "content_changed": "transition",
}


async def create_schedule(request: Request, services: Services) -> Response:
    installation_id = request.path_params["installation_id"]
    session = await require_session(request, services, installation_id)
    require_same_origin_post(request, services, session)
    if session.context_kind != "content":
        raise Refusal(
            403,
            "manage_cannot_create",
            "Schedules are created from a content item: use Schedule on it in Dee Wan.",
        )
    fields = request.form()
    shown = shown_versions(fields)
    access = await open_access(services, session)
    read = await read_session_content(services, access)
    repinned = await repin_form(services, installation_id, read, fields)

    form = repinned or {name: fields.get(name, "").strip() for name in FORM_FIELDS}
    form["timezone"] = form["timezone"] or read.site.timezone

    async def refuse(code: str, status: int = 422, text: str | None = None) -> Response:
        error = {"code": code, "text": text or explain(code), "field": ERROR_FIELD.get(code, "")}
        return await content_page(services, access, read, status=status, form=form, error=error)

    kind, _, to = form["transition"].partition(":")
    changed = changed_since_shown(kind, shown, read)
    if changed is not None:
        return await refuse("content_changed", 409, text=changed)
    if not any(t.kind == kind and t.to == to for t in read.workflow.transitions):
        return await refuse("transition_not_allowed")
    version = (
        read.content.current_version_id if kind == "publish" else read.content.published_version_id
    )
    if version is None:
        return await refuse("nothing_published")
    now = services.clock.now_ms()
    resolved = resolve_local_time(
        form["local_time"],
        form["timezone"],
        form["fold"] or None,
        now=datetime.fromtimestamp(now / 1000, UTC),
    )
    if isinstance(resolved, TimeRefusal):
        return await refuse(resolved.code, text=resolved.message)

    content_id = read.content.primary_id
    new = NewSchedule(
        id="sch_" + services.crypto.random_token()[:22],
        installation_id=installation_id,
        content_id=content_id,
        kind=kind,
        to_state=to,
        version_id=version,
        workflow_revision=read.workflow.revision,
        due_at=resolved.due_at_ms,
        timezone=resolved.timezone,
        local_time=resolved.local_time,
        fold=resolved.fold,
        requested_by=session.person_id,
        requested_by_name=session.person_name,
    )
    try:
        superseded = await schedules.create(services.db, new, now)
    except RunningConflict:
        return await refuse("execution_in_progress", 409)
    log.info(
        "installation %s: schedule %s created (%s %s), superseding %d",
        installation_id,
        new.id,
        kind,
        content_id,
        superseded,
    )
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = f"&fold_ignored={form['fold']}" if form["fold"] and resolved.fold is None else ""
    return redirect(f"/installations/{installation_id}?created={new.id}{ignored}")


async def cancel_schedule(request: Request, services: Services) -> Response:
    installation_id = request.path_params["installation_id"]
    schedule_id = request.path_params["schedule_id"]
    session = await require_session(request, services, installation_id)
    require_same_origin_post(request, services, session)
    schedule = (
        await schedules.get(services.db, installation_id, schedule_id)
        if is_id(schedule_id)
        else None
    )
    if schedule is None:
        raise Refusal(404, "schedule_not_found", "There is no such schedule in this installation.")
    if session.context_kind == "content" and schedule.content_id != session.content_primary_id:
        raise Refusal(
            403,
            "other_content",
            "This schedule belongs to other content. Use the Scheduling page in Dee Wan.",
        )
    await require_cancel_right(services, session, schedule)
    # Everything the answer needs is built before the write: nothing may fail after it.
    back = back_query(request.form()) if session.context_kind == "manage" else ""
    now = services.clock.now_ms()
    cancelled = await schedules.cancel(
        services.db,
        installation_id,
        schedule_id,
        now,
        person_id=session.person_id,
        person_name=session.person_name,
    )
    if not cancelled:
        current = await schedules.get(services.db, installation_id, schedule_id)
        code = (
            "execution_in_progress"
            if current and current.status == Status.RUNNING
            else "not_cancellable"
        )
        raise Refusal(409, code, explain(code))
    log.info("installation %s: schedule %s cancelled", installation_id, schedule_id)
    return redirect(f"/installations/{installation_id}?cancelled={schedule_id}{back}")
