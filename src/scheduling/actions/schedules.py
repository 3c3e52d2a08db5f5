"""Schedules made and ended from the pages: create (and re-pin, and try a refused one again)
from `ScheduleForm`, the form's one model, on its own or into a release; cancel, after a page
that names what would be cancelled; dismiss a refused one.

A create reads the content again and stores a schedule only if the version it would pin is
the one the editor looked at. A cancel never calls Dee Wan and never reverses a change made.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from functools import partial

from scheduling.actions.access import (
    Access,
    creates_key,
    limited,
    open_access,
    read_launched_content,
)
from scheduling.actions.listing import read_titles
from scheduling.actions.releases import now_in, placed, tell_clock, wall_time
from scheduling.domain.outcomes import NOT_DONE, WAITING, Status
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import (
    MAX_TITLE_CHARS,
    NewSchedule,
    Rights,
    Schedule,
    ShownVersions,
    changed_since_shown,
    pin_of,
    shown_versions,
)
from scheduling.domain.secrets import content_title, is_id
from scheduling.domain.times import (
    ResolvedTime,
    Retry,
    TimeRefusal,
    next_minute_wall,
)
from scheduling.domain.wording import Refusal, explain
from scheduling.limits import CallLimit, retry_after_seconds
from scheduling.ports import Database
from scheduling.repository import schedules
from scheduling.repository.installations import Session
from scheduling.repository.schedules import ReleaseClosed, RunningConflict
from scheduling.services import Services, log

# -- create ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleForm:
    """The content page's form, the one model of it: what a create sends, as text (the action
    checks every field), and what the page shows again after a refusal (as entered, or as a
    re-pin or a Try again fills it)."""

    transition: str = ""  # "kind:to"
    local_time: str = ""
    timezone: str = ""
    fold: str = ""
    version_id: str = ""  # the versions the page showed
    published_version_id: str = ""
    repin_of: str | None = None
    proposed_by: str | None = None  # a confirmed proposal's agent, as its history names it
    release: str = ""  # none; a waiting one's id (its time used); "new": named `release_name`
    release_name: str = ""
    move_of: str | None = None  # a waiting schedule made again at the form's time
    send_now_of: str | None = None  # … or now

    @classmethod
    def posted(cls, fields: Mapping[str, str]) -> ScheduleForm:
        """The form as a browser posted it; a field it did not send is empty."""
        texts = (*_TYPED, "version_id", "published_version_id", "release_name")
        return cls(
            **{name: fields.get(name, "") for name in texts},
            repin_of=fields.get("repin_of"),
            release=fields.get("release", "").strip(),
        )

    def as_entered(self) -> ScheduleForm:
        """The fields a person typed or chose, without the spaces around them."""
        return replace(self, **{name: getattr(self, name).strip() for name in _TYPED})


# The form's fields a person types or chooses.
_TYPED = ("transition", "local_time", "timezone", "fold")


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
        form: ScheduleForm,
        retries: tuple[Retry, ...] = (),
        retry_of: str | None = None,
    ) -> None:
        super().__init__(status, code, message)
        self.field = field
        self.access = access
        self.read = read
        self.form = form
        self.retries = retries
        self.retry_of = retry_of  # refused on a Try again of this schedule


# How a new row was made from an old one (`schedules.replaced_as`).
REPINNED, MOVED, SENT_NOW, RESUMED, RETRIED = "repinned", "moved", "sent_now", "resumed", "retried"


@dataclass(frozen=True)
class Created:
    """A schedule made: where it is, and whether a fold given for it was ignored."""

    installation_id: str
    schedule_id: str
    fold_ignored: str | None  # a fold given for a wall time that happens once
    sent_now: str | None = None  # sent now: "clock" (its clock was told) or "tick" (the next)


@dataclass(frozen=True)
class _Draft:
    """A create under way: who asks, what Dee Wan says now, and what the form holds."""

    access: Access
    read: ContentRead
    form: ScheduleForm
    retry_of: str | None = None
    made_from: Schedule | None = None  # re-pinned, moved, sent now, tried again
    made_as: str | None = None

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
            retry_of=self.retry_of,
        )


async def create_schedule(services: Services, session: Session, asked: ScheduleForm) -> Created:
    if session.context_kind != "content":
        raise Refusal(
            403,
            "manage_cannot_create",
            "Schedules are created from a content item: use Schedule on it in Dee Wan.",
        )
    shown = shown_versions(asked.version_id, asked.published_version_id)
    kept = {name: getattr(asked, name) for name in _TYPED}
    if asked.repin_of is not None:
        kept["repin_of"] = asked.repin_of
    if asked.release:
        kept |= {"release": asked.release, "release_name": asked.release_name}
    pins = (asked.version_id, asked.published_version_id)
    async with _person_limit(services, session, *pins, **kept):
        access = await open_access(services, session)
        read = await read_launched_content(services, access)
    draft = await _draft(services, access, read, asked)
    return await _store(services, draft, shown, asked.proposed_by)


async def retry_schedule(
    services: Services, session: Session, schedule_id: str, version_id: str, published: str
) -> Created:
    """Try a refused schedule again: a new schedule of its change (with its own id and key),
    due at the next minute in its zone, pinned to what the page showed (`version_id`,
    `published`), by the same rules as a create: refused while the content changed since
    the page was shown, while one of its change is being sent, or when the person may not
    make the change; a live waiting one is replaced."""
    if session.context_kind != "content":
        raise Refusal.explained(403, "retry_from_content")
    shown = shown_versions(version_id, published)
    old = await _schedule(services.db, session.installation_id, schedule_id)
    async with _person_limit(services, session, version_id, published):
        access = await open_access(services, session)
        read = await read_launched_content(services, access)
    if old.content_id != read.content.primary_id:
        raise Refusal.explained(403, "other_content")
    if old.status not in NOT_DONE or old.release_id is not None:  # a release is resumed
        raise Refusal.explained(409, "not_retryable")
    now = services.clock.now_ms()
    local_time, fold = next_minute_wall(now, old.timezone)
    form = ScheduleForm(f"{old.kind}:{old.to_state}", local_time, old.timezone, fold or "")
    draft = _Draft(access, read, form, retry_of=old.id, made_from=old, made_as=RETRIED)
    return await _store(services, draft, shown)


async def _store(
    services: Services, draft: _Draft, shown: ShownVersions, proposed_by: str | None = None
) -> Created:
    now = services.clock.now_ms()
    keep = draft.made_from if draft.made_as == REPINNED else None  # its release and place
    resolve = partial(_resolved, draft, now)  # the form's time, for a new release
    choice = (draft.form.release, draft.form.release_name)
    place = await placed(services, draft.access, choice, now, keep, resolve, draft.refuse)
    new = _new_schedule(services, draft, shown, now, place.when)
    new = replace(new, release_id=place.release_id, release_position=place.position)
    if draft.made_from is not None:
        new = replace(new, replaces=draft.made_from.id, replaced_as=draft.made_as)
    if proposed_by is not None:  # the person confirmed an agent's proposal: both are named
        new = replace(new, requested_by_name=f"{new.requested_by_name}, confirming {proposed_by}")
    new = await _with_title(services, new, draft.read)
    try:
        superseded = len(await schedules.create_all(services.db, [new], now, first=place.first))
    except RunningConflict:
        raise draft.refuse(409, "execution_in_progress", "transition") from None
    except ReleaseClosed:
        raise draft.refuse(409, "release_closed", "release") from None
    made = f"{draft.made_as} from {draft.made_from.id}" if draft.made_from else "new"
    log.info(
        "installation %s: schedule %s created (%s %s, %s), superseding %d",
        *(new.installation_id, new.id, new.kind, new.content_id, made, superseded),
    )
    await tell_clock(services, new.installation_id)
    fold = draft.form.fold
    ignored = fold if fold and new.fold is None and draft.retry_of is None else None
    by = "clock" if services.clocks is not None else "tick"
    return Created(new.installation_id, new.id, ignored, by if draft.made_as == SENT_NOW else None)


def _person_limit(
    services: Services, session: Session, version_id: str, published: str, **kept: str
) -> AbstractAsyncContextManager[None]:
    """A create, or a try again, reads Dee Wan: at most `MAX_CREATES_PER_MINUTE` a person.
    Past them nothing is read or stored, and the form is kept (the page sends it again)."""
    fields = {
        "csrf_token": session.csrf_token,
        "opened_for": session.opened_for,
        "version_id": version_id,
        "published_version_id": published,
        **kept,
    }

    def too_many(wait_ms: int) -> Refusal:
        return Refusal.too_many(
            "too_many_creates",
            f"{explain('too_many_creates')} Nothing was scheduled.",
            retry_after_seconds(wait_ms),
            title="Too many schedules at once",
            then="send it again",
            resend=list(fields.items()),
        )

    limit = CallLimit(per_minute=services.config.max_creates_per_minute)
    key = creates_key(session.installation_id, session.person_id)
    return limited(services, [(key, limit)], too_many)


async def _draft(
    services: Services, access: Access, read: ContentRead, asked: ScheduleForm
) -> _Draft:
    """What to create: the form's fields, or for a waiting schedule made again its change (and,
    re-pinned, its time; sent now, now); the site's zone when none was given."""
    form, made_from, made_as = asked.as_entered(), None, None
    again = ((asked.repin_of, REPINNED), (asked.move_of, MOVED), (asked.send_now_of, SENT_NOW))
    for old_id, made_as in ((old, how) for old, how in again if old is not None):
        made_from = await _waiting(services, access, read, old_id, made_as)
        change = f"{made_from.kind}:{made_from.to_state}"
        if made_as == MOVED:
            form = replace(form, transition=change, release="")
        else:
            old_time = (made_from.local_time, made_from.timezone, made_from.fold or "")
            form = ScheduleForm(change, *old_time)
        break
    if not form.timezone:
        form = replace(form, timezone=read.site.timezone)
    return _Draft(access, read, form, made_from=made_from, made_as=made_as)


async def _waiting(
    services: Services, access: Access, read: ContentRead, old_id: str, made_as: str
) -> Schedule:
    """The waiting schedule a re-pin, a move or a send-now makes again: this content's, still
    waiting, and (moved or sent now) not a release's item."""
    old = await _schedule(services.db, access.installation.id, old_id)
    if old.content_id != read.content.primary_id:
        raise Refusal.explained(403, "other_content")
    if old.status not in WAITING:
        running = old.status == Status.RUNNING
        raise Refusal.explained(409, "execution_in_progress" if running else "not_repinnable")
    if old.release_id is not None and made_as != REPINNED:
        raise Refusal.explained(409, "release_item_alone")
    return old


def _new_schedule(
    services: Services,
    draft: _Draft,
    shown: ShownVersions,
    now: int,
    when: ResolvedTime | None = None,
) -> NewSchedule:
    """The schedule the draft makes, pinned to what the page showed; refused on the form
    when that is no longer what Dee Wan reports, or when the person or the time does not
    allow it."""
    read, form = draft.read, draft.form
    kind, _, to = form.transition.partition(":")
    then = "press Try again" if draft.retry_of else "press Schedule again"
    changed = changed_since_shown(kind, shown, read, then=then)
    if changed is not None:
        raise draft.refuse(409, "content_changed", "transition", changed)
    if not Rights.read(read).offers(kind, to):
        raise draft.refuse(422, "transition_not_allowed", "transition")
    version = pin_of(kind, read.content)
    if version is None:
        raise draft.refuse(422, "nothing_published", "transition")
    when = when or _resolved(draft, now)
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
    """The content's title, sealed (a digest's line names the content by it; none is stored
    readable)."""
    title = read.content.title[:MAX_TITLE_CHARS]
    context = content_title(new.installation_id, new.id)
    return replace(new, title_sealed=await services.crypto.seal(title, context))


def _resolved(draft: _Draft, now: int) -> ResolvedTime:
    form = draft.form
    if draft.made_as == SENT_NOW:
        return now_in(form.timezone, now)
    resolved = wall_time(form.local_time, form.timezone, form.fold, now)
    if isinstance(resolved, TimeRefusal):
        raise draft.refuse(422, resolved.code, resolved.field, resolved.message, resolved.retries)
    return resolved


# -- cancel ----------------------------------------------------------------------------------------

# The confirmation names the content by its title when Dee Wan gives it within this time;
# the cancel itself never waits for Dee Wan.
TITLE_BUDGET_S = 2.0


@dataclass(frozen=True)
class CancelPreview:
    """What the cancel confirmation shows: the schedule, its content's title, and now."""

    schedule: Schedule
    title: str | None  # the content's title, when Dee Wan gave it in time
    now_ms: int


async def preview_cancel(services: Services, session: Session, schedule_id: str) -> CancelPreview:
    """What a cancel would end, refused as the cancel itself would be."""
    schedule = await _allowed(services.db, session, schedule_id)
    if schedule.status not in WAITING:
        raise _not_waiting(schedule)
    title = await _title(services, session, schedule)
    return CancelPreview(schedule, title, services.clock.now_ms())


async def cancel_schedule(services: Services, session: Session, schedule_id: str) -> None:
    await _allowed(services.db, session, schedule_id)
    await cancel_allowed(
        services,
        session.installation_id,
        schedule_id,
        person_id=session.person_id,
        person_name=session.person_name,
    )


async def cancel_allowed(
    services: Services,
    installation_id: str,
    schedule_id: str,
    *,
    person_id: str,
    person_name: str,
    by: str = "",
) -> None:
    """The cancel itself, once the caller judged it may (a page's session, an agent's key):
    one compare-and-set on "still waiting", then the installation's clock told."""
    db = services.db
    cancelled = await schedules.cancel(
        db,
        installation_id,
        schedule_id,
        services.clock.now_ms(),
        person_id=person_id,
        person_name=person_name,
    )
    if not cancelled:
        current = await schedules.get(db, installation_id, schedule_id)
        raise _not_waiting(current)
    log.info("installation %s: schedule %s cancelled%s", installation_id, schedule_id, by)
    await tell_clock(services, installation_id)


async def _allowed(db: Database, session: Session, schedule_id: str) -> Schedule:
    """The schedule, if it exists in the session's installation and the session may cancel it."""
    schedule = await _schedule(db, session.installation_id, schedule_id)
    refused = session.rights.cancel_refusal(schedule)
    if refused is not None:
        raise Refusal.explained(403, refused)
    return schedule


async def _schedule(db: Database, installation_id: str, schedule_id: str) -> Schedule:
    """The installation's schedule of the id a page sent; refused when there is none."""
    found = await schedules.get(db, installation_id, schedule_id) if is_id(schedule_id) else None
    if found is None:
        raise Refusal.explained(404, "schedule_not_found")
    return found


def _not_waiting(schedule: Schedule | None) -> Refusal:
    running = schedule is not None and schedule.status == Status.RUNNING
    return Refusal.explained(409, "execution_in_progress" if running else "not_cancellable")


async def _title(services: Services, session: Session, schedule: Schedule) -> str | None:
    """The content's title, read with the session's delegation; None when it cannot be."""
    try:
        access = await open_access(services, session)
    except Refusal:
        return None
    titles = await read_titles(services, access, {schedule.content_id}, budget_s=TITLE_BUDGET_S)
    return titles.title(schedule.content_id)


# -- dismiss ---------------------------------------------------------------------------------------


async def dismiss_schedule(db: Database, now: int, session: Session, schedule_id: str) -> None:
    if session.context_kind != "manage":
        raise Refusal.explained(403, "dismiss_from_manage")
    installation_id = session.installation_id
    await _schedule(db, installation_id, schedule_id)
    dismissed = await schedules.dismiss(
        db,
        installation_id,
        schedule_id,
        now,
        person_id=session.person_id,
        person_name=session.person_name,
    )
    if not dismissed:
        raise Refusal.explained(409, "not_dismissable")
    log.info("installation %s: schedule %s dismissed", installation_id, schedule_id)
