"""The content page as the template reads it: the content, the form with the time arithmetic
done for the editor, a receipt after a create, and the content's schedules: the live ones and
the latest few ended ones in view, the rest folded into a history, paged."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from scheduling.actions.create import FormRefusal, ScheduleForm
from scheduling.dee_wan import UNAVAILABLE
from scheduling.domain.collisions import Conflict, before_text, conflicts
from scheduling.domain.content import Content, ContentRead
from scheduling.domain.localtime import FOLDS, Retry, occurrence_labels, occurrences
from scheduling.domain.outcomes import UNTRUSTED
from scheduling.domain.pins import ShownVersions
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import WAITING, Status
from scheduling.domain.time_words import (
    duration_words,
    instant_text,
    wall_text,
    years_ahead,
    years_text,
)
from scheduling.domain.timezones import canonical_zone, offered_zones
from scheduling.domain.wording import change_text
from scheduling.http.html import time_labels
from scheduling.http.html.view_models import (
    CardPage,
    Moment,
    Pager,
    RetryOffer,
    ScheduleCard,
    card_page,
    cards,
    pager,
    replaces_text,
    schedule_card,
)
from scheduling.pages.agents.agents_view import AgentsPanel
from scheduling.pages.content.content_read import ContentView


@dataclass(frozen=True)
class Choice:
    """One change the form offers."""

    value: str  # "kind:to"
    label: str
    disabled: bool
    replaces: str | None = None  # what choosing it does to the live schedule of its kind
    replaces_id: str | None = None
    collides: str | None = None  # the other kind's waiting schedule it would collide with
    collides_id: str | None = None


@dataclass(frozen=True)
class FormError:
    """Why the form was refused, and the times it offers instead."""

    code: str
    text: str
    field: str
    retries: tuple[Retry, ...]  # one-click ways out: the same form with one field changed
    retry_of: str | None = None  # refused on a Try again of this schedule: offer it again


@dataclass(frozen=True)
class Receipt:
    """What a schedule just made says: its card, and what it replaced."""

    card: ScheduleCard
    replaced: str | None  # the replaced schedule's time, in words
    replaced_id: str | None
    replaced_version: str | None
    years_ahead: str | None  # "5 years", when it is more than a year ahead
    conflict: Conflict | None = None  # it collides with the other kind's waiting schedule


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
class KeptForm:
    """What a create or a Try again posted, kept when Dee Wan could not be read to judge it:
    the page comes back with it, to be sent again once Dee Wan answers."""

    form: ScheduleForm | None  # a create's fields, as entered
    pins: ShownVersions | None  # the versions the posted page showed
    retry_of: str | None = None  # a Try again of this schedule


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
    content: Content | None  # None: Dee Wan could not be read (`unread`)
    content_id: str
    pins: ShownVersions | None  # what the page shows, which its forms carry
    primary_title: str | None
    site_timezone: str | None
    zones: tuple[str, ...]
    choices: tuple[Choice, ...]
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
    agents: AgentsPanel | None = None  # proposals and agent keys (issue 39)
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
    """`refusal`: the form comes back with what was entered and what was wrong with it.
    Without Dee Wan's read (`view.unread`), `kept` is what a refused create or Try again
    posted: it comes back with Dee Wan's state said above it."""
    read, session = view.read, view.access.session
    moment = Moment(view.now_ms, max_lateness_ms)
    shown = cards(view.schedules, moment, live=view.live)
    if read is not None:
        pins: ShownVersions | None = ShownVersions(
            read.content.current_version_id, read.content.published_version_id
        )
        choices = _choices(read, view.live)
        # After a create, offer the zone just used rather than the site's again.
        zone = view.made.timezone if view.made is not None else read.site.timezone
        form = refusal.form if refusal else _defaults(choices, zone, view.now_ms)
        error = (
            FormError(
                refusal.code, refusal.message, refusal.field, refusal.retries, refusal.retry_of
            )
            if refusal
            else None
        )
    else:
        pins, choices, form, error = _unread_form(view, kept)
        shown = _offer_again(shown, kept)
    in_view = view.page.in_view if view.page_number == 1 else 0
    current, folded = shown[:in_view], shown[in_view:]
    notice = _receipt(view, moment)
    # A zone typed in any case is written back the canonical way.
    form_zone = canonical_zone(form.timezone)
    if form_zone is not None:
        form = replace(form, timezone=form_zone)
    site_zone = read.site.timezone if read is not None else None
    now_zone = form_zone or site_zone or "UTC"
    both = occurrences(form.local_time, form.timezone)
    fold_choices = tuple(occurrence_labels(*both)) if both else None
    history_count = view.page.total - view.page.in_view
    content_id = read.content.id if read is not None else session.content_id or ""
    return ContentPage(
        title=f"Schedule {read.content.title}" if read else f"Schedules of content {content_id}",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        content=read.content if read is not None else None,
        content_id=content_id,
        pins=pins,
        primary_title=view.primary_title,
        site_timezone=site_zone,
        zones=offered_zones(),
        choices=choices,
        form=form,
        time_entered=_entered(form, error is not None),
        error=error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=time_labels.now_in(now_zone, view.now_ms),
        fold_choices=fold_choices,
        focus_fold=bool(error and error.code == "ambiguous_local_time" and fold_choices),
        flash=_cancelled(view.cancelled),
        cancelled_id=view.cancelled.id if view.cancelled else None,
        page_note=(
            f"There is no page {view.asked_page}: this is the last one, page {view.page_number}."
            if view.asked_page != view.page_number
            else None
        ),
        unread=_unread(view),
        stale=tuple(card for card in shown if card.stale),
        current=current,
        history=History(
            cards=folded,
            count=history_count,
            replaced=view.page.counts.get(Status.SUPERSEDED, 0),
            open=view.page_number > 1,
        ),
        card_page=card_page(
            session, pins=pins, back=_back(view.page_number), unread=view.unread is not None
        ),
        pager=_pager(view),
        dee_wan_href=view.access.installation.base_url,
    )


_UNREAD_NOTES = {
    UNAVAILABLE: "Dee Wan is not answering right now",
    UNTRUSTED: (
        "Dee Wan answered about this content in a way its plugin protocol does not allow"
        " (a garbled or unexpected answer)"
    ),
}


def _unread(view: ContentView) -> Unread | None:
    if view.unread is None:
        return None
    why = _UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    text = (
        f"{why}, so this page shows the schedules as Scheduling keeps them, without the"
        " content's details, and nothing new can be scheduled until Dee Wan answers. Waiting"
        " schedules are still sent at their time and can still be cancelled."
    )
    if view.unread.code == UNTRUSTED:
        text += " If it keeps happening, tell the plugin's operator."
    base = f"/installations/{view.access.installation.id}"
    page = f"{base}?page={view.page_number}" if view.page_number > 1 else base
    return Unread(view.unread.code, text, page, view.access.installation.base_url)


def _unread_form(
    view: ContentView, kept: KeptForm | None
) -> tuple[ShownVersions | None, tuple[Choice, ...], ScheduleForm, FormError | None]:
    """Without a read, the only form is the one that was posted: its change as it was
    offered, the rest as entered, and above it why nothing was scheduled."""
    empty = ScheduleForm()
    if kept is None or view.unread is None:
        return None, (), empty, None
    why = _UNREAD_NOTES.get(view.unread.code, "Dee Wan could not be read")
    form = kept.form or empty
    choice = _posted_choice(form.transition, kept.pins)
    if kept.retry_of:
        then = "press Try again on it in a minute"
    elif choice is not None:
        then = "the form keeps what you entered: press Schedule again in a minute"
    else:
        then = "try again in a minute"
    error = FormError(
        view.unread.code,
        f"{why}, so this could not be checked and nothing was scheduled; {then}.",
        "transition",
        (),
    )
    return kept.pins, (choice,) if choice else (), form, error


def _posted_choice(transition: str, pins: ShownVersions | None) -> Choice | None:
    kind, _, _ = transition.partition(":")
    if pins is None or kind not in ("publish", "unpublish"):
        return None
    version = pins.pin(kind)
    if version is None:
        return None
    label = (
        f"Publish version {version}"
        if kind == "publish"
        else f"Unpublish published version {version}"
    )
    return Choice(transition, label, False)


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
        card=schedule_card(made, moment),
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


def _choices(read: ContentRead, live: tuple[Schedule, ...]) -> tuple[Choice, ...]:
    by_kind = {s.kind: s for s in live}
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
        existing = by_kind.get(t.kind)
        other = next(
            (s for s in live if s.kind != t.kind and s.status in WAITING and not s.needs_repin),
            None,
        )
        choices.append(
            Choice(
                f"{t.kind}:{t.to}",
                label,
                disabled,
                replaces=replaces_text(existing) if existing else None,
                replaces_id=existing.id if existing else None,
                collides=before_text(other) if other else None,
                collides_id=other.id if other else None,
            )
        )
    return tuple(choices)


def _entered(form: ScheduleForm, refused: bool) -> str | None:
    """The picker writes dates the browser's way; the hint says the same time the one way."""
    if not form.local_time:
        return None
    said = wall_text(form.local_time)
    if said == form.local_time:
        return None  # not a value the picker sends: nothing to restate
    if refused:
        return f"You entered {said}."
    lead = duration_words(time_labels.SUGGESTION_LEAD_MS)
    return f"Suggested: {said}, the first whole hour at least {lead} from now."


def _defaults(choices: tuple[Choice, ...], zone: str, now_ms: int) -> ScheduleForm:
    """A fresh form: the first change offered, the first whole hour in `zone` at least
    `SUGGESTION_LEAD_MS` ahead."""
    return ScheduleForm(
        transition=next((c.value for c in choices if not c.disabled), ""),
        local_time=time_labels.suggested_local_time(zone, now_ms),
        timezone=zone,
        fold="",
    )


def _back(page_number: int) -> tuple[tuple[str, str], ...]:
    return (("page", str(page_number)),) if page_number > 1 else ()


def _pager(view: ContentView) -> Pager:
    base = f"/installations/{view.access.installation.id}"
    return pager(
        lambda number: f"{base}?page={number}" if number > 1 else base,
        view.page_number,
        view.page.total,
        len(view.schedules),
        view.page.has_next,
    )
