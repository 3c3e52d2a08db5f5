"""The content page as the template reads it: the content, the form with the time arithmetic
done for the editor, a receipt after a create, and the content's schedules, paged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.content_page import ContentView
from scheduling.actions.create import FormRefusal, FormValues
from scheduling.domain.content import Content, ContentRead
from scheduling.domain.localtime import FOLDS, occurrence_labels, occurrences
from scheduling.domain.secret_shapes import is_id
from scheduling.domain.statuses import Status
from scheduling.domain.timezones import known_zone, zone_names
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


@dataclass(frozen=True)
class FormError:
    code: str
    text: str
    field: str


@dataclass(frozen=True)
class Receipt:
    card: ScheduleCard
    superseded: bool


@dataclass(frozen=True)
class ContentPage:
    template: ClassVar[str] = "content.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    content: Content
    site_timezone: str
    zones: tuple[str, ...]
    choices: tuple[Choice, ...]
    form: FormValues
    error: FormError | None
    notice: Receipt | None
    fold_ignored: str | None
    now_zone: str
    now_label: str | None
    chosen_now: str | None
    fold_choices: tuple[str, ...] | None
    focus_fold: bool
    flash: str | None
    stale: tuple[ScheduleCard, ...]
    schedules: tuple[ScheduleCard, ...]
    card_page: CardPage
    pager: Pager


def content_page(
    view: ContentView,
    max_lateness_ms: int,
    *,
    refusal: FormRefusal | None = None,
    fold_ignored: str | None = None,
    cancelled: str | None = None,
) -> ContentPage:
    """`refusal`: the form comes back with what was entered and what was wrong with it."""
    read, session = view.read, view.access.session
    moment = Moment(view.now_ms, max_lateness_ms)
    shown = cards(view.schedules, moment)
    made = view.made
    notice = None
    if made is not None and made.status == Status.PENDING:
        notice = Receipt(schedule_card(made, moment), view.replaced)
    choices = _choices(read)
    # After a create, offer the zone just used rather than the site's again.
    zone = made.timezone if made is not None else read.site.timezone
    form = refusal.form if refusal else _defaults(choices, zone, view.now_ms)
    error = FormError(refusal.code, refusal.message, refusal.field) if refusal else None
    now_zone = form.timezone if known_zone(form.timezone) else read.site.timezone
    both = occurrences(form.local_time, form.timezone)
    fold_choices = tuple(occurrence_labels(*both)) if both else None
    return ContentPage(
        title=f"Schedule {read.content.title}",
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        content=read.content,
        site_timezone=read.site.timezone,
        zones=tuple(sorted(zone_names())),
        choices=choices,
        form=form,
        error=error,
        notice=notice,
        fold_ignored=fold_ignored if notice and fold_ignored in FOLDS else None,
        now_zone=now_zone,
        now_label=time_labels.now_in(now_zone, view.now_ms),
        chosen_now=time_labels.now_in(form.timezone, view.now_ms) if error else None,
        fold_choices=fold_choices,
        focus_fold=bool(error and error.code == "ambiguous_local_time" and fold_choices),
        flash="The schedule was cancelled." if cancelled and is_id(cancelled) else None,
        stale=tuple(card for card in shown if card.stale),
        schedules=shown,
        card_page=card_page(session, content=read.content, back=_back(view.page_number)),
        pager=_pager(view),
    )


def _choices(read: ContentRead) -> tuple[Choice, ...]:
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
        choices.append(Choice(f"{t.kind}:{t.to}", label, disabled))
    return tuple(choices)


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
        sum(view.page.counts.values()),
        len(view.schedules),
        view.page.has_next,
    )
