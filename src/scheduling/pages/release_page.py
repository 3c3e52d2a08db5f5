"""A release's page (`GET /installations/{id}/releases/{release_id}`, any session of its
installation): its items in send order as cards, checked against Dee Wan with the person's
delegation each time it is opened; and its forms (`POST …/releases/{release_id}/{action}`:
check, rename, move, cancel, resume, up, down). A refused form comes back on the page
(`again`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions import release_verbs as act
from scheduling.actions.create import ScheduleForm
from scheduling.actions.create import create_schedule as create
from scheduling.actions.listing import Listed, listed
from scheduling.domain.content import ContentRead
from scheduling.domain.localtime import rfc3339
from scheduling.domain.pins import ShownVersions, pin_of
from scheduling.domain.refusals import Refusal
from scheduling.domain.release import RELEASE_HELD, Release, ReleaseLine, held_text
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import LIVE, Status
from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import change_text, explain
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html.render import page
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    ScheduleCard,
    card_page,
    cards,
    pager,
)
from scheduling.http.listing_query import page_number
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.content.content_page import to_receipt
from scheduling.repository import releases
from scheduling.repository.sessions import Session
from scheduling.services import Services

STATUS_WORDS = {
    "waiting": "Waiting for its time",
    "conflict": "Waiting, with an item Dee Wan would refuse: pin it again or take it out",
    "running": "Being sent, one item at a time",
    "held": "Held: an item was not done, and the rest is not sent",
    "completed": "Done: every item applied",
    "cancelled": "Cancelled",
}
# What the release's verbs refuse of what a form asked (and every 422: a time, a name): the
# page says it beside its forms. Anything else (a session, a CSRF token) is an error page.
ON_THE_PAGE = (
    "release_items_not_allowed", "not_reorderable", "release_closed", "not_resumable",
    "nothing_to_resume", "execution_in_progress", "content_changed",
)  # fmt: skip
NOTICES = {
    "checked": "Checked against Dee Wan now.",
    "renamed": "Renamed.",
    "moved": "Moved: every waiting item is due at the new time.",
    "resumed": "Resumed: the rest is sent now, in order.",
    "reordered": "The order changed.",
}


@dataclass(frozen=True)
class Resume:
    version: str  # the held item's pin
    repin_version: str | None  # what Dee Wan reports now, when it differs and may be pinned
    current: str = ""  # the versions the page showed, which the re-pin checks
    published: str | None = None


@dataclass(frozen=True)
class Order:
    id: str
    change: str
    steps: tuple[tuple[str, str], ...]  # (action, label): up, down


@dataclass(frozen=True)
class ReleasePage:
    template: ClassVar[str] = "release.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    tab: str | None
    release_id: str
    release_name: str
    status: str
    status_label: str
    when_label: str
    when_iso: str
    created_by_name: str
    checked_label: str
    held: str | None
    held_by: str | None
    resume: Resume | None
    items: tuple[ScheduleCard, ...]
    card_page: CardPage
    pager: Pager
    reorder: tuple[Order, ...]
    open: bool  # waiting or held: its forms are offered
    kept: Mapping[str, str]
    notice: str | None = None
    untouched: tuple[act.Untouched, ...] = ()
    error: str | None = None
    error_code: str | None = None


async def _model(
    services: Services,
    session: Session,
    release: Release,
    checked: act.Checked | None,
    number: int = 1,
) -> ReleasePage:
    now = services.clock.now_ms()
    items = await releases.items(services.db, release.installation_id, release.id, number)
    reads = checked.reads if checked is not None else {}
    rows, pins = _repinnable(listed(items.schedules, session.rights, reads), session, reads)
    shown = cards(rows, Moment(now, services.config.max_lateness_ms))
    status = release.shown(now)
    held = next((s for s in items.schedules if s.id == release.held_by), None)
    base = f"/installations/{release.installation_id}/releases/{release.id}"
    live = [s for s in items.schedules if s.status in LIVE]
    ordering = status == "waiting" and release.due_at > now and len(live) > 1
    return ReleasePage(
        title=f"Release {release.name}",
        person_name=session.person_name,
        installation_id=release.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        tab=session.tab,
        release_id=release.id,
        release_name=release.name,
        status=status,
        status_label=STATUS_WORDS[status],
        when_label=instant_text(release.due_at, release.timezone),
        when_iso=rfc3339(release.due_at),
        created_by_name=release.created_by_name,
        checked_label=_checked(release, checked),
        held=_held(release, items.schedules),
        held_by=release.held_by,
        resume=_resume(held, reads.get(held.content_id) if held else None),
        items=shown,
        card_page=replace(card_page(session, pins=pins), context_kind="release"),
        pager=pager(
            lambda n: f"{base}?page={n}" if n > 1 else base,
            number,
            items.total,
            len(items.schedules),
            items.has_next,
        ),
        reorder=tuple(_order(s.id, s.kind, s.version_id, n, len(live)) for n, s in enumerate(live))
        if ordering
        else (),
        open=release.status in ("waiting", "held"),
        kept={
            "name": release.name,
            "local_time": release.local_time,
            "timezone": release.timezone,
            "fold": release.fold or "",
        },
    )


def _repinnable(
    rows: Sequence[Listed], session: Session, reads: Mapping[str, ContentRead | None]
) -> tuple[tuple[Listed, ...], ShownVersions | None]:
    """An item is pinned again from its launch's own content, with the versions the check
    read of it (which the re-pin checks); another content's, from that content's page."""
    own = reads.get(session.content_primary_id or "")
    if own is None:
        return tuple(replace(r, repin_version=None) for r in rows), None
    pins = ShownVersions(own.content.current_version_id, own.content.published_version_id)
    mine = own.content.primary_id
    return tuple(
        r if r.schedule.content_id == mine else replace(r, repin_version=None) for r in rows
    ), pins


def _checked(release: Release, checked: act.Checked | None) -> str:
    if release.checked_at is None:
        return "Not checked yet."
    said = f"{instant_text(release.checked_at, release.timezone)}, by {release.checked_by_name}"
    if checked is not None and checked.not_checked:
        said += f"; {checked.not_checked} items not checked this time (check again)"
    if checked is not None and checked.unread:
        said += f"; {checked.unread} items Dee Wan did not answer for"
    return said + "."


def _held(release: Release, items: Sequence[Schedule]) -> str | None:
    """What the held release says: the item not done, what was applied, what is held."""
    if release.held_by is None or release.held_at is None:
        return None
    done = tuple(s.id for s in items if s.status == Status.COMPLETED)
    rest = tuple(s.id for s in items if s.result_code == RELEASE_HELD)
    line = ReleaseLine(release.id, release.name, release.due_at, release.timezone, done, rest)
    return held_text(line, release.held_by, release.held_code, release.held_at)


def _resume(held: Schedule | None, read: ContentRead | None) -> Resume | None:
    """The held item's ways on: as it is, re-pinned to what Dee Wan reports now (when the
    check read it and it differs), or taken out."""
    if held is None:
        return None
    if read is None:
        return Resume(held.version_id, None)
    now = pin_of(held.kind, read.content)
    return Resume(
        held.version_id,
        now if now is not None and now != held.version_id else None,
        read.content.current_version_id,
        read.content.published_version_id,
    )


def _order(schedule_id: str, kind: str, version: str, at: int, count: int) -> Order:
    steps: tuple[tuple[str, str], ...] = (("up", "Up"),) if at > 0 else ()
    steps += (("down", "Down"),) if at < count - 1 else ()
    return Order(schedule_id, change_text(kind, version), steps)


async def release_page(request: Request, services: Services) -> Response:
    """The release, checked against Dee Wan now with the person's delegation."""
    session = await require_session(request, services)
    release = await act.release_of(services, session, request.path_params["release_id"])
    checked = (
        await act.check_release(services, session, release)
        if release.status in ("waiting", "held")
        else None
    )
    release = await act.release_of(services, session, release.id)
    model = await _model(services, session, release, checked, page_number(request.query))
    done = request.query.get("done")
    return page(replace(model, notice=NOTICES.get(done or "")))


async def release_action(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    release_id, action = request.path_params["release_id"], request.path_params["action"]
    fields = request.form()
    if action == "cancel":
        outcome = await act.cancel_release(services, session, release_id)
        release = await act.release_of(services, session, release_id)
        model = await _model(services, session, release, None)
        said = f"Cancelled {len(outcome.cancelled)} items; nothing was sent to Dee Wan."
        if outcome.untouched:
            said += f" {len(outcome.untouched)} items were not cancelled:"
        return page(replace(model, notice=said, untouched=tuple(outcome.untouched)))
    await _act(services, session, release_id, action, fields)
    done = "reordered" if action in ("up", "down") else action
    return redirect(f"/installations/{session.installation_id}/releases/{release_id}?done={done}")


async def _act(
    services: Services, session: Session, release_id: str, action: str, fields: Mapping[str, str]
) -> None:
    if action == "check":
        await act.check_release(
            services, session, await act.release_of(services, session, release_id)
        )
    elif action == "rename":
        await act.rename_release(services, session, release_id, fields.get("name", ""))
    elif action == "move":
        await act.move_release(
            services,
            session,
            release_id,
            fields.get("local_time", ""),
            fields.get("timezone", ""),
            fields.get("fold", ""),
        )
    elif action == "resume":
        shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
        await act.resume_release(services, session, release_id, fields.get("how", ""), shown)
    elif action in ("up", "down"):
        step = -1 if action == "up" else 1
        await act.reorder_item(services, session, release_id, fields.get("schedule_id", ""), step)
    else:
        raise Refusal(404, "not_found", "There is nothing at this address.")


async def again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A form the release's verbs refused: its page again, with what was entered and why
    (any other refusal, a session's or a CSRF token's, is shown as every refusal is)."""
    if refused.code not in ON_THE_PAGE and refused.status != 422:  # 422: a time or a name
        return None
    session = await require_session(request, services)
    release = await act.release_of(services, session, request.path_params["release_id"])
    model = await _model(services, session, release, None)
    fields = request.form()
    kept = {**model.kept, **{k: v for k, v in fields.items() if k in model.kept}}
    said = refused.message or explain(refused.code)
    return page(replace(model, kept=kept, error=said, error_code=refused.code), refused.status)


async def move_schedule(request: Request, services: Services) -> Response:
    """A waiting schedule's card: moved to a new time (a new row; its pin as the page showed)."""
    session = await require_form_post(request, services)
    asked = replace(ScheduleForm.posted(request.form()), move_of=request.path_params["schedule_id"])
    return to_receipt(session, await create(services, session, asked))


async def send_now(request: Request, services: Services) -> Response:
    """A waiting schedule's card: sent now instead of at its time (a new row, due at once)."""
    session = await require_form_post(request, services)
    fields = request.form()
    asked = ScheduleForm(
        version_id=fields.get("version_id", ""),
        published_version_id=fields.get("published_version_id", ""),
        send_now_of=request.path_params["schedule_id"],
    )
    return to_receipt(session, await create(services, session, asked))
