"""Create a schedule from a content launch, or re-pin a stale one in one step.

The form carries the versions its page showed; the content is read again at
submit and a schedule is stored only if the version it would pin is still the
one the editor looked at. A re-pin (`repin_of`) is a create with the old
schedule's change, local time, zone and fold, judged by the same rules. A new
schedule supersedes the live waiting one of its content and kind.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from scheduling.actions.access import Access, open_access, read_launched_content
from scheduling.actions.clock import tell_clock
from scheduling.domain import associated_data
from scheduling.domain.content import ContentRead
from scheduling.domain.localtime import ResolvedTime, Retry, TimeRefusal, resolve_local_time
from scheduling.domain.pins import ShownVersions, changed_since_shown, pin_of
from scheduling.domain.refusals import Refusal
from scheduling.domain.rights import Rights
from scheduling.domain.schedule import MAX_TITLE_CHARS, NewSchedule
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import WAITING, Status
from scheduling.domain.wording import explain
from scheduling.repository import schedules
from scheduling.repository.schedules import RunningConflict
from scheduling.repository.sessions import Session
from scheduling.services import Services, log


@dataclass(frozen=True)
class ScheduleRequest:
    """What a create form sent, as text; the action checks every field."""

    version_id: str  # the versions the page showed
    published_version_id: str
    transition: str  # "kind:to"
    local_time: str
    timezone: str
    fold: str
    repin_of: str | None = None


@dataclass(frozen=True)
class FormValues:
    """The form as it is shown again after a refusal: what was entered (or re-pinned)."""

    transition: str
    local_time: str
    timezone: str
    fold: str


class FormRefusal(Refusal):
    """A refusal about what the form asked. The content page shows the form again with the
    values as entered, `field` marked, and the content as `read` (at submit) says."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str,
        access: Access,
        read: ContentRead,
        form: FormValues,
        retries: tuple[Retry, ...] = (),
    ) -> None:
        super().__init__(status, code, message)
        self.field = field
        self.access = access
        self.read = read
        self.form = form
        self.retries = retries


@dataclass(frozen=True)
class Created:
    installation_id: str
    schedule_id: str
    fold_ignored: str | None  # a fold given for a wall time that happens once


@dataclass(frozen=True)
class _Draft:
    """A create under way: who asks, what Dee Wan says now, and what the form holds."""

    access: Access
    read: ContentRead
    form: FormValues

    def refuse(
        self,
        status: int,
        code: str,
        field: str,
        text: str | None = None,
        retries: tuple[Retry, ...] = (),
    ) -> FormRefusal:
        message = text or explain(code)
        return FormRefusal(
            status,
            code,
            message,
            field=field,
            access=self.access,
            read=self.read,
            form=self.form,
            retries=retries,
        )


async def create_schedule(services: Services, session: Session, asked: ScheduleRequest) -> Created:
    if session.context_kind != "content":
        raise Refusal(
            403,
            "manage_cannot_create",
            "Schedules are created from a content item: use Schedule on it in Dee Wan.",
        )
    shown = _shown_versions(asked)
    access = await open_access(services, session)
    read = await read_launched_content(services, access)
    draft = _Draft(access, read, await _form(services, access, read, asked))
    now = services.clock.now_ms()
    new = await _with_title(services, _new_schedule(services, draft, shown, now), read)
    try:
        superseded = await schedules.create(services.db, new, now)
    except RunningConflict:
        raise draft.refuse(409, "execution_in_progress", "transition") from None
    log.info(
        "installation %s: schedule %s created (%s %s), superseding %d",
        new.installation_id,
        new.id,
        new.kind,
        new.content_id,
        superseded,
    )
    await tell_clock(services, new.installation_id)
    fold = draft.form.fold
    return Created(new.installation_id, new.id, fold if fold and new.fold is None else None)


def _shown_versions(asked: ScheduleRequest) -> ShownVersions:
    """The versions the form says its page showed; a form without them did not come from it."""
    current, published = asked.version_id.strip(), asked.published_version_id.strip()
    if not is_id(current) or (published and not is_id(published)):
        raise Refusal(
            400,
            "invalid_request",
            "This form does not say which version it showed. Reload the page and try again.",
        )
    return ShownVersions(current, published or None)


async def _form(
    services: Services, access: Access, read: ContentRead, asked: ScheduleRequest
) -> FormValues:
    """What to create: the form's fields, or for a re-pin the old schedule's; the site's zone
    when none was given."""
    if asked.repin_of is not None:
        form = await _repinned(services, access, read, asked.repin_of)
    else:
        form = FormValues(
            asked.transition.strip(),
            asked.local_time.strip(),
            asked.timezone.strip(),
            asked.fold.strip(),
        )
    if form.timezone:
        return form
    return FormValues(form.transition, form.local_time, read.site.timezone, form.fold)


async def _repinned(
    services: Services, access: Access, read: ContentRead, old_id: str
) -> FormValues:
    """The old schedule's change, local time, zone and fold, as a create form sends them."""
    installation_id = access.installation.id
    old = await schedules.get(services.db, installation_id, old_id) if is_id(old_id) else None
    if old is None:
        raise Refusal.explained(404, "schedule_not_found")
    if old.content_id != read.content.primary_id:
        raise Refusal.explained(403, "other_content")
    if old.status == Status.RUNNING:
        raise Refusal.explained(409, "execution_in_progress")
    if old.status not in WAITING:
        raise Refusal(
            409,
            "not_repinnable",
            "Only a schedule that is still waiting can be pinned again; this one has ended or "
            "was replaced since the page was shown. Reload the page to see it.",
        )
    return FormValues(f"{old.kind}:{old.to_state}", old.local_time, old.timezone, old.fold or "")


def _new_schedule(services: Services, draft: _Draft, shown: ShownVersions, now: int) -> NewSchedule:
    """The schedule the draft makes, pinned to what the page showed; refused on the form
    when that is no longer what Dee Wan reports, or when the person or the time does not
    allow it."""
    read, form = draft.read, draft.form
    kind, _, to = form.transition.partition(":")
    changed = changed_since_shown(kind, shown, read)
    if changed is not None:
        raise draft.refuse(409, "content_changed", "transition", changed)
    if not Rights.read(read).offers(kind, to):
        raise draft.refuse(422, "transition_not_allowed", "transition")
    version = pin_of(kind, read.content)
    if version is None:
        raise draft.refuse(422, "nothing_published", "transition")
    when = _resolved(draft, now)
    session = draft.access.session
    return NewSchedule(
        id="sch_" + services.crypto.random_token()[:22],
        installation_id=draft.access.installation.id,
        content_id=read.content.primary_id,
        kind=kind,
        to_state=to,
        version_id=version,
        workflow_revision=read.workflow.revision,
        due_at=when.due_at_ms,
        timezone=when.timezone,
        local_time=when.local_time,
        fold=when.fold,
        requested_by=session.person_id,
        requested_by_name=session.person_name,
    )


async def _with_title(services: Services, new: NewSchedule, read: ContentRead) -> NewSchedule:
    """The content's title, sealed (a chat line names the content by it; none is stored
    readable)."""
    title = read.content.title[:MAX_TITLE_CHARS]
    context = associated_data.content_title(new.installation_id, new.id)
    return replace(new, title_sealed=await services.crypto.seal(title, context))


def _resolved(draft: _Draft, now: int) -> ResolvedTime:
    form = draft.form
    resolved = resolve_local_time(
        form.local_time,
        form.timezone,
        form.fold or None,
        now=datetime.fromtimestamp(now / 1000, UTC),
    )
    if isinstance(resolved, TimeRefusal):
        raise draft.refuse(422, resolved.code, resolved.field, resolved.message, resolved.retries)
    return resolved
