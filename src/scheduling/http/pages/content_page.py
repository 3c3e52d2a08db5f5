"""The content page as the template reads it: the content, the form with the time arithmetic
done for the editor, a receipt after a create, and the content's schedules: the live ones and
the latest few ended ones in view, the rest folded into a history, paged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.content_page import ContentView
from scheduling.actions.create import FormRefusal, FormValues
from scheduling.domain.content import Content, ContentRead
from scheduling.domain.localtime import FOLDS, Retry, occurrence_labels, occurrences
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import WAITING, Status
from scheduling.domain.time_words import instant_text, wall_text, years_ahead, years_text
from scheduling.domain.timezones import canonical_zone, zone_names
from scheduling.domain.wording import KIND
from scheduling.http.pages import time_labels
from scheduling.http.pages.view_models import (
    CardPage,
    Moment,
    Pager,
    ScheduleCard,
    card_page,
    cards,
    pager,
    schedule_card,
)


@dataclass(frozen=True)
class Choice:
    value: str  # "kind:to"
    label: str
    disabled: bool
    replaces: str | None = None  # what choosing it does to the live schedule of its kind
    replaces_id: str | None = None


@dataclass(frozen=True)
class FormError:
    code: str
    text: str
    field: str
    retries: tuple[Retry, ...]  # one-click ways out: the same form with one field changed


@dataclass(frozen=True)
class Receipt:
    card: ScheduleCard
    replaced: str | None  # the replaced schedule's time, in words
    replaced_id: str | None
    replaced_version: str | None
    years_ahead: str | None  # "5 years", when it is more than a year ahead


@dataclass(frozen=True)
class History:
    """The folded part: replaced schedules and the older ended ones."""

    cards: tuple[ScheduleCard, ...]  # this page's
    count: int  # in all pages
    replaced: int  # of which were replaced by a newer schedule
    open: bool  # past the first page the history is what the person came for

    @property
    def summary(self) -> str:
        """`History: 8 earlier schedules, all replaced by a newer one`."""
        said = f"History: {self.count} earlier schedule{'' if self.count == 1 else 's'}"
        if not self.replaced:
            return said
        if self.replaced == self.count:
            return said + (
                ", replaced by a newer one" if self.count == 1 else ", all replaced by a newer one"
            )
        return f"{said}, {self.replaced} of them replaced by a newer one"


@dataclass(frozen=True)
class ContentPage:
    template: ClassVar[str] = "content.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    content: Content
    primary_title: str | None
    site_timezone: str
    zones: tuple[str, ...]
    choices: tuple[Choice, ...]
    form: FormValues
    time_entered: str | None  # the form's time, written the one way (the picker writes its own)
    error: FormError | None
    notice: Receipt | None
    fold_ignored: str | None
    now_zone: str
    now_label: str | None
    chosen_now: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    flash: str | None
    cancelled_id: str | None
    page_note: str | None
    stale: tuple[ScheduleCard, ...]
    current: tuple[ScheduleCard, ...]
    history: History
    card_page: CardPage
    pager: Pager


def content_page(
    view: ContentView,
    max_lateness_ms: int,
    *,
    refusal: FormRefusal | None = None,
    fold_ignored: str | None = None,
) -> ContentPage:
    """`refusal`: the form comes back with what was entered and what was wrong with it."""
    read, session = view.read, view.access.session
    moment = Moment(view.now_ms, max_lateness_ms)
    shown = cards(view.schedules, moment)
    current, folded = _split(view, shown)
    notice = _receipt(view, moment)
    choices = _choices(read, view.live)
    # After a create, offer the zone just used rather than the site's again.
    zone = view.made.timezone if view.made is not None else read.site.timezone
    form = refusal.form if refusal else _defaults(choices, zone, view.now_ms)
    error = _error(refusal)
    now_zone = canonical_zone(form.timezone) or read.site.timezone
    fold_choices = _fold_choices(form)
    return ContentPage(
        title=f"Schedule {read.content.title}",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        content=read.content,
        primary_title=view.primary_title,
        site_timezone=read.site.timezone,
        zones=tuple(sorted(zone_names())),
        choices=choices,
        form=form,
        time_entered=_entered(form, refusal is not None),
        error=error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=time_labels.now_in(now_zone, view.now_ms),
        chosen_now=time_labels.now_in(form.timezone, view.now_ms) if error else None,
        fold_choices=fold_choices,
        focus_fold=bool(error and error.code == "ambiguous_local_time" and fold_choices),
        flash=_cancelled(view.cancelled),
        cancelled_id=view.cancelled.id if view.cancelled else None,
        page_note=_page_note(view),
        stale=tuple(card for card in shown if card.stale),
        current=current,
        history=_history(view, folded),
        card_page=card_page(session, content=read.content, back=_back(view.page_number)),
        pager=_pager(view),
    )


def _split(
    view: ContentView, shown: tuple[ScheduleCard, ...]
) -> tuple[tuple[ScheduleCard, ...], tuple[ScheduleCard, ...]]:
    """The cards in view, and those folded in the history (every one, past page 1)."""
    in_view = view.page.in_view if view.page_number == 1 else 0
    return shown[:in_view], shown[in_view:]


def _fold_choices(form: FormValues) -> tuple[str, ...] | None:
    """The two readings of a wall time the clocks pass twice; None for any other."""
    both = occurrences(form.local_time, form.timezone)
    return tuple(occurrence_labels(*both)) if both else None


def _history(view: ContentView, folded: tuple[ScheduleCard, ...]) -> History:
    replaced = view.page.counts.get(Status.SUPERSEDED, 0)
    count = view.page.total - view.page.in_view
    return History(folded, count, replaced, open=view.page_number > 1)


def _error(refusal: FormRefusal | None) -> FormError | None:
    if refusal is None:
        return None
    return FormError(refusal.code, refusal.message, refusal.field, refusal.retries)


def _page_note(view: ContentView) -> str | None:
    """A page asked for past the last: said, with the last shown instead."""
    if view.asked_page == view.page_number:
        return None
    return f"There is no page {view.asked_page}: this is the last one, page {view.page_number}."


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
    )


def _cancelled(schedule: Schedule | None) -> str | None:
    """The message after a cancel names what was cancelled."""
    if schedule is None:
        return None
    change = f"{KIND.get(schedule.kind, schedule.kind).lower()} version {schedule.version_id}"
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
        choices.append(
            Choice(
                f"{t.kind}:{t.to}",
                label,
                disabled,
                replaces=_replaces(existing) if existing else None,
                replaces_id=existing.id if existing else None,
            )
        )
    return tuple(choices)


def _replaces(live: Schedule) -> str:
    """What a new schedule of this kind does to the live one, before the form is sent."""
    when = instant_text(live.due_at, live.timezone)
    if live.status in WAITING:
        return (
            f"A new schedule replaces the waiting one of version {live.version_id}"
            f" for {when}: that one will not be sent."
        )
    return (
        f"The schedule for {when} is being sent to Dee Wan right now; "
        "a new one can be made once it is done."
    )


def _entered(form: FormValues, refused: bool) -> str | None:
    """The picker writes dates the browser's way; the hint says the same time the one way."""
    if not form.local_time:
        return None
    said = wall_text(form.local_time)
    if said == form.local_time:
        return None  # not a value the picker sends: nothing to restate
    return f"You entered {said}." if refused else f"Suggested: {said} (the next whole hour)."


def _defaults(choices: tuple[Choice, ...], zone: str, now_ms: int) -> FormValues:
    """A fresh form: the first change offered, the next whole hour in `zone`."""
    return FormValues(
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
