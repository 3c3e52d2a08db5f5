"""A release's verbs (check, rename, move, reorder, cancel, resume; a waiting schedule moved or
sent now), and after each write the installation's alarm clock told when it next has
something due. What a person may do to an item is what they may do to that schedule; a
release-wide verb does what it may and says which items it could not touch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from scheduling.actions.access import Access, open_access
from scheduling.actions.listing import read_titles
from scheduling.domain.outcomes import LIVE, NOT_DONE, WAITING, Status
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import (
    MAX_WAITING_RELEASES,
    NewSchedule,
    Release,
    ReleaseStatus,
    Rights,
    Schedule,
    changed_since_shown,
    conflict_of,
    name_refusal,
    new_release,
    pin_of,
    reordered,
    shown_versions,
    wake_for,
)
from scheduling.domain.secrets import is_id
from scheduling.domain.times import (
    Fold,
    ResolvedTime,
    TimeRefusal,
    next_minute_wall,
    resolve_local_time,
)
from scheduling.domain.wording import Refusal, explain
from scheduling.ports import Statement
from scheduling.repository import releases, schedules
from scheduling.repository.installations import Session
from scheduling.repository.leases import next_due
from scheduling.repository.schedules import ReleaseClosed, RunningConflict
from scheduling.services import Services, log

# -- the clock told --------------------------------------------------------------------------------


async def tell_clock(services: Services, installation_id: str) -> None:
    clocks = services.clocks
    if clocks is None:
        return
    try:
        due = await next_due(services.db, installation_id)
        if due is not None:
            await clocks.arm(installation_id, wake_for(due, services.config.clock_lead_ms))
    except Exception as exc:  # the write stands; the watchdog tells the clock
        log.warning(
            "installation %s: its clock was not told (%s); the watchdog tells it within a minute",
            installation_id,
            type(exc).__name__,
        )


# -- a release's verbs -----------------------------------------------------------------------------

NEW_RELEASE = "new"  # the form's `release` for a new release, named by `release_name`
# A check reads at most this many contents in one request (the rest: "not checked this
# time"), sharing one budget of time.
MAX_CHECKED = 50
CHECK_BUDGET_S = 5.0
# How a resume treats the item that was not done.
RESUME_WAYS = ("as_is", "repin", "remove")


@dataclass(frozen=True)
class Place:
    """Where a new schedule goes: its release (and place there) and the release's time, with
    what its batch writes first (a new release)."""

    release_id: str | None = None
    position: int | None = None
    when: ResolvedTime | None = None
    first: tuple[Statement, ...] = ()


async def placed(
    services: Services,
    access: Access,
    choice: tuple[str, str],
    now: int,
    keep: Schedule | None,
    resolve: Callable[[], ResolvedTime],
    refuse: Callable[..., Refusal],
) -> Place:
    """The form's release (`choice`: its `release` and `release_name`): none, a waiting one
    (its time is used: the form's is ignored), or a new one at the form's time (`resolve`); a
    re-pinned item (`keep`) keeps its release and place. A bad choice is refused on the form
    (`refuse(status, code, field, text)`)."""
    release, name = choice
    if keep is not None and keep.release_id is not None:
        return Place(keep.release_id, keep.release_position, _time(keep))
    if not release:
        return Place()
    installation_id = access.installation.id
    if release == NEW_RELEASE:
        refused = name_refusal(name)
        if refused is not None:
            raise refuse(422, "invalid_release_name", "release_name", refused)
        if await releases.waiting_count(services.db, installation_id) >= MAX_WAITING_RELEASES:
            raise refuse(409, "too_many_releases", "release")
        when = resolve()
        person = (access.session.person_id, access.session.person_name)
        made = new_release(_id(services, "rel_"), installation_id, person, name, when, now)
        return Place(made.id, None, when, (releases.insert(services.db, made),))
    found = await _release(services, installation_id, release)
    if found is None or found.status != ReleaseStatus.WAITING or found.due_at <= now:
        raise refuse(409, "release_closed", "release")
    return Place(found.id, None, _time(found))


def _id(services: Services, prefix: str) -> str:
    return prefix + services.crypto.random_token()[:22]


def _time(of: Release | Schedule) -> ResolvedTime:
    fold: Fold | None = "earlier" if of.fold == "earlier" else "later" if of.fold else None
    return ResolvedTime(of.due_at, of.local_time, of.timezone, fold)


def now_in(zone: str, now: int) -> ResolvedTime:
    """Due at once, written as this minute's wall time in `zone`."""
    local_time, fold = next_minute_wall(now - 60_000, zone)
    return ResolvedTime(now, local_time, zone, fold)


def wall_time(local_time: str, zone: str, fold: str, now: int) -> ResolvedTime | TimeRefusal:
    """A wall time a person gave (a fold only where it happens twice), resolved at `now`."""
    at = datetime.fromtimestamp(now / 1000, UTC)
    return resolve_local_time(local_time, zone, fold or None, now=at)


async def _release(services: Services, installation_id: str, release_id: str) -> Release | None:
    if not is_id(release_id):
        return None
    return await releases.get(services.db, installation_id, release_id)


async def release_of(services: Services, session: Session, release_id: str) -> Release:
    """The release, if it is the session's installation's."""
    found = await _release(services, session.installation_id, release_id)
    if found is None:
        raise Refusal.explained(404, "release_not_found")
    return found


# -- its items, and what a person may do with them ----------------------------------------


@dataclass(frozen=True)
class Untouched:
    """An item a release-wide action did not touch, and why (a sentence)."""

    schedule_id: str
    why: str


def _untouchable(session: Session, items: Sequence[Schedule]) -> list[Untouched]:
    """The items this person may not act on, each with why."""
    refused = ((s, session.rights.cancel_refusal(s)) for s in items)
    return [Untouched(s.id, explain(code)) for s, code in refused if code is not None]


def _all_or_nothing(untouched: Sequence[Untouched], doing: str) -> None:
    if untouched:
        listed = "; ".join(f"{u.schedule_id}: {u.why}" for u in untouched)
        raise Refusal(
            403,
            "release_items_not_allowed",
            f"Nothing was {doing}: a release moves as one, and you may not act on"
            f" {len(untouched)} of its items ({listed}). Someone who may, or a site admin"
            " from Manage, can.",
        )


async def _items(services: Services, release: Release) -> list[Schedule]:
    """Every current item of the release, in send order (up to its most items)."""
    found: list[Schedule] = []
    page = 1
    while True:
        listed = await releases.items(services.db, release.installation_id, release.id, page)
        found += listed.schedules
        if not listed.has_next:
            return found
        page += 1


# -- the check ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """What a check read: each item's content as Dee Wan reports it to the person now (None:
    not read), and how many items it left for another time or could not read."""

    reads: dict[str, ContentRead | None]
    not_checked: int = 0
    unread: int = 0


async def check_release(services: Services, session: Session, release: Release) -> Checked:
    """Read every waiting (or not done) item's content with the person's delegation, a few at a
    time within one budget, and mark each whose pin moved as a conflict (a current one as
    none); record when and by whom. Items past `MAX_CHECKED` contents wait for a later check."""
    items = [s for s in await _items(services, release) if s.status in (*WAITING, *NOT_DONE)]
    contents = sorted({s.content_id for s in items})
    chosen = set(contents[:MAX_CHECKED])
    try:
        access = await open_access(services, session)
    except Refusal:
        return Checked({}, not_checked=len(items))
    titles = await read_titles(services, access, chosen, budget_s=CHECK_BUDGET_S)
    found: dict[str, str | None] = {}
    for s in items:
        read = titles.reads.get(s.content_id)
        if read is not None and s.status in WAITING:
            found[s.id] = conflict_of(s.kind, s.version_id, s.workflow_revision, read)
    now = services.clock.now_ms()
    await releases.record_check(services.db, release, found, session.person_name, now)
    unread = sum(1 for s in items if s.content_id in chosen and titles.reads[s.content_id] is None)
    return Checked(
        dict(titles.reads),
        not_checked=sum(1 for s in items if s.content_id not in chosen),
        unread=unread,
    )


# -- reorder, rename, move, cancel ----------------------------------------------------------


async def reorder_item(
    services: Services, session: Session, release_id: str, schedule_id: str, step: int
) -> None:
    """Move a waiting item one place up (-1) or down (1), while the release waits for its time."""
    release = await release_of(services, session, release_id)
    live = [s for s in await _items(services, release) if s.status in LIVE]
    _all_or_nothing(_untouchable(session, [s for s in live if s.id == schedule_id]), "moved")
    order = reordered([s.id for s in live], schedule_id, step)
    now = services.clock.now_ms()
    if order is None or not await releases.reorder(services.db, release, order, now):
        raise Refusal.explained(409, "not_reorderable")


async def rename_release(services: Services, session: Session, release_id: str, name: str) -> None:
    release = await release_of(services, session, release_id)
    refused = name_refusal(name)
    if refused is not None:
        raise Refusal(422, "invalid_release_name", refused)
    if not await releases.rename(services.db, release, name.strip(), services.clock.now_ms()):
        raise Refusal.explained(409, "release_closed")


def _copy(
    services: Services, old: Schedule, session: Session, when: ResolvedTime, made_as: str
) -> NewSchedule:
    """A new row of `old`'s item at `when`: its change and pin, its place, a new id (the
    revision and key come with the insert), made by the person acting."""
    return NewSchedule(
        id=_id(services, "sch_"),
        installation_id=old.installation_id,
        content_id=old.content_id,
        kind=old.kind,
        to_state=old.to_state,
        version_id=old.version_id,
        workflow_revision=old.workflow_revision,
        due_at=when.due_at_ms,
        timezone=when.timezone,
        local_time=when.local_time,
        fold=when.fold,
        requested_by=session.person_id,
        requested_by_name=session.person_name,
        release_id=old.release_id,
        release_position=old.release_position,
        replaces=old.id,
        replaced_as=made_as,
    )


async def _write(
    services: Services,
    release: Release,
    rows: Sequence[NewSchedule],
    first: Sequence[Statement],
    closed: str = "release_closed",
) -> None:
    """The new rows, after `first`, in one batch; the installation's clock told."""
    try:
        await schedules.create_all(services.db, rows, services.clock.now_ms(), first=first)
    except RunningConflict:
        raise Refusal.explained(409, "execution_in_progress") from None
    except ReleaseClosed:
        raise Refusal.explained(409, closed) from None
    await tell_clock(services, release.installation_id)


async def move_release(
    services: Services, session: Session, release_id: str, local_time: str, timezone: str, fold: str
) -> Release:
    """Every live item to the new time (the same rules as a schedule's time), in one batch:
    new rows, new revisions and keys, each replacing its old one. Refused while an item is
    being sent, and for a person who may not move every item."""
    release = await release_of(services, session, release_id)
    if release.status != ReleaseStatus.WAITING:
        raise Refusal.explained(409, "release_closed")
    live = [s for s in await _items(services, release) if s.status in LIVE]
    if any(s.status in (Status.RUNNING, Status.RETRYING) for s in live):
        raise Refusal.explained(409, "execution_in_progress")
    _all_or_nothing(_untouchable(session, live), "moved")
    now = services.clock.now_ms()
    zone = timezone.strip() or release.timezone
    resolved = wall_time(local_time.strip(), zone, fold.strip(), now)
    if isinstance(resolved, TimeRefusal):
        raise Refusal(422, resolved.code, resolved.message)
    rows = [_copy(services, s, session, resolved, "moved") for s in live]
    await _write(services, release, rows, [releases.moved(services.db, release, resolved, now)])
    log.info("installation %s: release %s moved", release.installation_id, release.id)
    return release


@dataclass(frozen=True)
class Cancelled:
    """A release-wide cancel: the items cancelled, and those it could not touch, with why."""

    cancelled: list[str]
    untouched: list[Untouched]


async def cancel_release(services: Services, session: Session, release_id: str) -> Cancelled:
    """Cancel every waiting item this person may (never calls Dee Wan), and the release when
    no item is left that they may not; a held release's rest is cancelled with it."""
    release = await release_of(services, session, release_id)
    if release.status not in (ReleaseStatus.WAITING, ReleaseStatus.HELD):
        raise Refusal.explained(409, "release_closed")
    waiting = [s for s in await _items(services, release) if s.status in WAITING]
    untouched = _untouchable(session, waiting)
    kept = {u.schedule_id for u in untouched}
    ids = [s.id for s in waiting if s.id not in kept]
    person = (session.person_id, session.person_name)
    now = services.clock.now_ms()
    done = await releases.cancel(
        services.db, release, ids, whole=not untouched, person=person, now=now
    )
    log.info(
        "installation %s: release %s: %d cancelled", release.installation_id, release.id, len(done)
    )
    await tell_clock(services, release.installation_id)
    return Cancelled(done, untouched)


# -- resume --------------------------------------------------------------------------------


async def resume_release(
    services: Services,
    session: Session,
    release_id: str,
    how: str,
    shown: tuple[str, str] = ("", ""),
) -> Release:
    """A held release sent on from the item that was not done, now, in order, each with a
    fresh lateness window counted from now: that item as it is (`as_is`), re-pinned to what
    Dee Wan reports now (`repin`, the versions the page showed in `shown`), or taken out
    (`remove`); the items after it as they are."""
    release = await release_of(services, session, release_id)
    if release.status != ReleaseStatus.HELD or how not in RESUME_WAYS:
        raise Refusal.explained(409, "not_resumable")
    items = await _items(services, release)
    rest = [s for s in items if s.status in NOT_DONE and s.dismissed_at is None]
    _all_or_nothing(_untouchable(session, rest), "resumed")
    now = services.clock.now_ms()
    when = now_in(release.timezone, now)
    rows = [_copy(services, s, session, when, "resumed") for s in rest if s.id != release.held_by]
    head = next((s for s in rest if s.id == release.held_by), None)
    statements = [releases.resumed(services.db, release, now)]
    if head is not None and how == "remove":
        person = (session.person_id, session.person_name)
        statements.append(releases.taken_out(services.db, release, head.id, person, now))
    elif head is not None:
        row = _copy(services, head, session, when, "resumed")
        if how == "repin":
            row = await _repinned(services, session, head, row, shown)
        rows.insert(0, row)
    if not rows:  # the item not done was the last: nothing is left to send
        raise Refusal.explained(409, "nothing_to_resume")
    await _write(services, release, rows, statements, "not_resumable")
    log.info("installation %s: release %s resumed (%s)", release.installation_id, release.id, how)
    return release


async def _repinned(
    services: Services, session: Session, head: Schedule, row: NewSchedule, shown: tuple[str, str]
) -> NewSchedule:
    """The item pinned to what Dee Wan reports now, as the person's page showed it: read with
    their delegation, refused when it changed since or they may not make the change."""
    pins = shown_versions(*shown)
    access = await open_access(services, session)
    read = (await read_titles(services, access, {head.content_id}, budget_s=CHECK_BUDGET_S)).reads
    found = read.get(head.content_id)
    if found is None:
        raise Refusal.explained(503, "dee_wan_unavailable")
    changed = changed_since_shown(head.kind, pins, found, then="press Resume again")
    if changed is not None:
        raise Refusal(409, "content_changed", changed)
    if not Rights.read(found).offers(head.kind, head.to_state):
        raise Refusal.explained(422, "transition_not_allowed")
    version = pin_of(head.kind, found.content)
    if version is None:
        raise Refusal.explained(422, "nothing_published")
    return replace(row, version_id=version, workflow_revision=found.workflow.revision)
