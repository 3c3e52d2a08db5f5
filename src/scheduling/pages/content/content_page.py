"""The content page (a content launch): `GET /installations/{id}` shows it, its form creates
a schedule, and a refused schedule's Try again makes a new one (session + CSRF); a refused
form comes back on the page (`form_again`, `confirm_again`, which `App.handle` calls).

The page as the template reads it: the content, the form (`content_form.py`), a receipt
after a create, and the content's schedules: the live ones and the latest few ended ones in
view, the rest folded into a history, paged."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.access import open_access
from scheduling.actions.create import Created, FormRefusal, ScheduleForm
from scheduling.actions.create import create_schedule as create
from scheduling.actions.create import retry_schedule as retry
from scheduling.domain.collisions import Conflict, conflicts
from scheduling.domain.content import Content
from scheduling.domain.localtime import FOLDS
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.pins import ShownVersions, posted_versions
from scheduling.domain.refusals import Refusal
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import Status
from scheduling.domain.time_words import (
    instant_text,
    years_ahead,
    years_text,
)
from scheduling.domain.timezones import offered_zones
from scheduling.domain.wording import change_text
from scheduling.http.guards import require_form_post, require_session
from scheduling.http.html import time_labels
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    ReleaseRef,
    RetryOffer,
    ScheduleCard,
    card_page,
    cards,
    pager,
    schedule_card,
)
from scheduling.http.listing_query import page_number
from scheduling.http.requests import Request
from scheduling.http.responses import Response, redirect
from scheduling.pages.content.content_form import (
    UNREAD_NOTES,
    Choice,
    FormError,
    KeptForm,
    form_part,
)
from scheduling.pages.content.content_read import (
    UNREADABLE,
    ContentView,
    content_view,
    show_content,
    unread_view,
)
from scheduling.pages.since_last_visit import News, take_news
from scheduling.repository import proposals
from scheduling.repository.sessions import Session
from scheduling.services import Services


@dataclass(frozen=True)
class Receipt:
    """What a schedule just made says: its card, and what it replaced."""

    card: ScheduleCard
    replaced: str | None  # the replaced schedule's time, in words
    replaced_id: str | None
    replaced_version: str | None
    years_ahead: str | None  # "5 years", when it is more than a year ahead
    conflict: Conflict | None = None  # it collides with the other kind's waiting schedule
    sent_now: str | None = None  # sent now: by its clock ("clock") or the next tick ("tick")


@dataclass(frozen=True)
class History:
    """The folded part: replaced schedules and the older ended ones."""

    cards: tuple[ScheduleCard, ...]  # this page's
    count: int  # in all pages
    replaced: int  # of which were replaced by a newer schedule
    open: bool  # past the first page the history is what the person came for

    @property
    def summary(self) -> str:
        """`History: 8 earlier schedules, all replaced by a newer one`, and how many of them
        this page shows when it shows fewer (`(3 on this page)`)."""
        said = f"History: {self.count} earlier schedule{'' if self.count == 1 else 's'}"
        if self.replaced == self.count:
            said += (
                ", replaced by a newer one" if self.count == 1 else ", all replaced by a newer one"
            )
        elif self.replaced:
            said += f", {self.replaced} of them replaced by a newer one"
        if len(self.cards) != self.count:
            said += f" ({len(self.cards)} on this page)"
        return said


@dataclass(frozen=True)
class Unread:
    """Why the page shows the schedules without the content: Dee Wan could not be read."""

    code: str
    text: str
    retry_href: str  # the page again
    dee_wan_href: str  # the installation's Dee Wan


@dataclass(frozen=True)
class ContentPage:
    """The content page: the content, the form and its schedules."""

    template: ClassVar[str] = "content.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    tab: str | None
    content: Content | None  # None: Dee Wan could not be read (`unread`)
    content_id: str
    pins: ShownVersions | None  # what the page shows, which its forms carry
    primary_title: str | None
    site_timezone: str | None
    zones: tuple[str, ...]
    choices: tuple[Choice, ...]
    releases: tuple[Choice, ...]  # the waiting releases the change may join
    form: ScheduleForm
    time_entered: str | None  # the form's time, written the one way (the picker writes its own)
    error: FormError | None
    notice: Receipt | None
    fold_ignored: str | None
    now_zone: str
    now_label: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    flash: str | None
    cancelled_id: str | None
    page_note: str | None
    unread: Unread | None
    stale: tuple[ScheduleCard, ...]
    current: tuple[ScheduleCard, ...]
    history: History
    card_page: CardPage
    pager: Pager
    rooms: tuple[Room, ...] = ()
    news: News | None = None  # what became of the person's schedules since their last look
    proposals_href: str | None = None  # agents' proposals wait for this content: where
    # The header's Back to Dee Wan: a session proves the browser came from there.
    dee_wan_href: str | None = None


def content_page(
    view: ContentView,
    max_lateness_ms: int,
    *,
    refusal: FormRefusal | None = None,
    fold_ignored: str | None = None,
    kept: KeptForm | None = None,
) -> ContentPage:
    """`refusal` and `kept`: the form shown again (`content_form.form_part`)."""
    read, session = view.read, view.access.session
    moment = Moment(view.now_ms, max_lateness_ms)
    shown = _in_releases(view, cards(view.schedules, moment, live=view.live))
    if read is None:
        shown = _offer_again(shown, kept)
    part = form_part(view, refusal, kept)
    in_view = view.page.in_view if view.page_number == 1 else 0
    notice = _receipt(view, moment)
    site_zone = read.site.timezone if read is not None else None
    now_zone = part.zone or site_zone or "UTC"
    content_id = read.content.id if read is not None else session.content_id or ""
    return ContentPage(
        title=f"Schedule {read.content.title}" if read else f"Schedules of content {content_id}",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        tab=session.tab,
        content=read.content if read is not None else None,
        content_id=content_id,
        pins=part.pins,
        primary_title=view.primary_title,
        site_timezone=site_zone,
        zones=offered_zones(),
        choices=part.choices,
        releases=part.releases,
        form=part.form,
        time_entered=part.time_entered,
        error=part.error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=time_labels.now_in(now_zone, view.now_ms),
        fold_choices=part.fold_choices,
        focus_fold=part.focus_fold,
        flash=_cancelled(view.cancelled),
        cancelled_id=view.cancelled.id if view.cancelled else None,
        page_note=_page_note(view),
        unread=_unread(view),
        stale=tuple(card for card in shown if card.stale),
        current=shown[:in_view],
        history=_history(view, shown[in_view:]),
        card_page=card_page(
            session, pins=part.pins, back=_back(view.page_number), unread=view.unread is not None
        ),
        pager=_pager(view),
        rooms=rooms(session, "schedules"),
        dee_wan_href=view.access.installation.base_url,
    )


def _in_releases(view: ContentView, shown: tuple[ScheduleCard, ...]) -> tuple[ScheduleCard, ...]:
    """Each item of a release names it (and links to its page)."""
    named = {r.id: ReleaseRef(r.id, r.name, r.shown(view.now_ms)) for r in view.releases}
    return tuple(replace(c, release=named.get(c.release_id or "")) for c in shown)


def _page_note(view: ContentView) -> str | None:
    if view.asked_page == view.page_number:
        return None
    return f"There is no page {view.asked_page}: this is the last one, page {view.page_number}."


def _history(view: ContentView, folded: tuple[ScheduleCard, ...]) -> History:
    return History(
        cards=folded,
        count=view.page.total - view.page.in_view,
        replaced=view.page.counts.get(Status.SUPERSEDED, 0),
        open=view.page_number > 1,
    )


def _unread(view: ContentView) -> Unread | None:
    if view.unread is None:
        return None
    why = UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    text = (
        f"{why}, so this page shows the schedules as Scheduling keeps them, without the"
        " content's details, and nothing new can be scheduled until Dee Wan answers. Waiting"
        " schedules are still sent at their time and can still be cancelled."
    )
    if view.unread.code == UNTRUSTED:
        text += " If it keeps happening, tell the plugin's operator."
    again = view.access.session.href(query=_back(view.page_number))
    return Unread(view.unread.code, text, again, view.access.installation.base_url)


def _offer_again(
    shown: tuple[ScheduleCard, ...], kept: KeptForm | None
) -> tuple[ScheduleCard, ...]:
    """A Try again refused because Dee Wan could not be read: its button comes back."""
    if kept is None or kept.retry_of is None or kept.pins is None:
        return shown
    return tuple(
        replace(c, retry=RetryOffer(None, None)) if c.id == kept.retry_of else c for c in shown
    )


def _receipt(view: ContentView, moment: Moment) -> Receipt | None:
    made = view.made
    if made is None:
        return None
    replaced = view.replaced
    ahead = years_ahead(made.due_at - view.now_ms)
    return Receipt(
        card=_in_releases(view, (schedule_card(made, moment),))[0],
        replaced=instant_text(replaced.due_at, replaced.timezone) if replaced else None,
        replaced_id=replaced.id if replaced else None,
        replaced_version=replaced.version_id if replaced else None,
        years_ahead=years_text(ahead) if ahead else None,
        conflict=conflicts(view.live).get(made.id),
    )


def _cancelled(schedule: Schedule | None) -> str | None:
    """The message after a cancel names what was cancelled."""
    if schedule is None:
        return None
    change = change_text(schedule.kind, schedule.version_id)
    when = instant_text(schedule.due_at, schedule.timezone)
    return f"Cancelled: the schedule to {change} at {when}. Nothing was sent to Dee Wan."


def _back(page_number: int) -> tuple[tuple[str, str], ...]:
    return (("page", str(page_number)),) if page_number > 1 else ()


def _pager(view: ContentView) -> Pager:
    return pager(
        lambda number: view.access.session.href(query=_back(number)),
        view.page_number,
        view.page.total,
        len(view.schedules),
        view.page.has_next,
    )


async def show(request: Request, services: Services, session: Session) -> Response:
    """The content page for a session of a content launch."""
    query = request.query
    shown = await show_content(
        services,
        session,
        page_number=page_number(query),
        created=query.get("created"),
        cancelled=query.get("cancelled"),
    )
    lateness = services.config.max_lateness_ms
    model = content_page(shown, lateness, fold_ignored=query.get("fold_ignored"))
    if model.notice is not None and query.get("sent_now") in ("clock", "tick"):
        model = replace(model, notice=replace(model.notice, sent_now=query.get("sent_now")))
    read = shown.read
    content = read.content.primary_id if read else session.content_primary_id or ""
    now = services.clock.now_ms()
    waiting = await proposals.pending(services.db, session.installation_id, content, now)
    return page(
        replace(
            model,
            news=await take_news(services, shown.access, request.method, content),
            proposals_href=session.href("/agents") if waiting else None,
        )
    )


async def create_schedule(request: Request, services: Services) -> Response:
    session = await require_form_post(request, services)
    created = await create(services, session, ScheduleForm.posted(request.form()))
    return to_receipt(session, created)


async def retry_schedule(request: Request, services: Services) -> Response:
    """A refused schedule's Try again: a new schedule of its change, at the next minute."""
    session = await require_form_post(request, services)
    fields = request.form()
    shown = (fields.get("version_id", ""), fields.get("published_version_id", ""))
    created = await retry(services, session, request.path_params["schedule_id"], *shown)
    return to_receipt(session, created)


async def form_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A refused create or Try again: the same page again, with what was entered and what was
    wrong with it. When Dee Wan could not be read to judge the form, the page from the
    database, with the form as it was sent and the reason above it (503 while Dee Wan is
    down). Any other refusal is shown as it is (None)."""
    if isinstance(refused, FormRefusal):
        return await refused_form(services, refused)
    if refused.code not in UNREADABLE:
        return None
    fields = request.form()
    pins = posted_versions(fields.get("version_id", ""), fields.get("published_version_id", ""))
    schedule_id = request.path_params.get("schedule_id")
    if schedule_id is not None:  # a Try again: its button comes back
        kept = KeptForm(None, pins, schedule_id)
    else:
        kept = KeptForm(ScheduleForm.posted(fields).as_entered(), pins)
    access = await open_access(services, await require_session(request, services))
    view = await unread_view(services, access, refused)
    lateness = services.config.max_lateness_ms
    response = page(content_page(view, lateness, kept=kept), refused.status)
    response.headers.extend(refused.headers)
    return response


async def confirm_again(request: Request, services: Services, refused: Refusal) -> Response | None:
    """A proposal's confirm refused on its form: the content page again, with the form as
    the proposal filled it and why; any other refusal is shown as it is."""
    return await refused_form(services, refused) if isinstance(refused, FormRefusal) else None


async def refused_form(services: Services, refused: FormRefusal) -> Response:
    """The content page again, with the form as entered and what was wrong with it."""
    view = await content_view(services, refused.access, refused.read)
    lateness = services.config.max_lateness_ms
    return page(content_page(view, lateness, refusal=refused), refused.status)


def to_receipt(session: Session, created: Created) -> Response:
    """The content page of the launch, with the receipt of the schedule just made."""
    # A fold for a time that happens once is not needed: the receipt says it was ignored.
    ignored = [("fold_ignored", created.fold_ignored)] if created.fold_ignored else []
    now = [("sent_now", created.sent_now)] if created.sent_now else []
    return redirect(session.href(query=[("created", created.schedule_id), *ignored, *now]))
