"""What the templates show, as frozen values: each schedule as a card, its instants written the
one way (`time_words.instant_text`), in plain words with codes kept for support; the settings
every card of a page shares; the pager."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from scheduling.actions.listing import Listed, last_page
from scheduling.domain.content import Content
from scheduling.domain.localtime import rfc3339
from scheduling.domain.schedule import Attempt, Schedule
from scheduling.domain.statuses import Status
from scheduling.domain.time_words import duration_text, instant_text
from scheduling.domain.wording import (
    KIND,
    STATUS,
    explain_answer,
    explain_result,
    support_detail,
)
from scheduling.http.pages import time_labels
from scheduling.repository.schedules import PAGE_SIZE
from scheduling.repository.sessions import Session


@dataclass(frozen=True)
class Moment:
    """What every card is read against: now, and how late the plugin may still send."""

    now_ms: int
    max_lateness_ms: int


@dataclass(frozen=True)
class AttemptLine:
    number: int
    started_label: str
    finished_at: int | None
    code: str | None
    http_status: int | None
    text: str
    support: str  # the status and code, for support


@dataclass(frozen=True)
class ScheduleCard:
    id: str
    content_id: str
    kind: str
    kind_label: str
    version_id: str
    due_at: int
    timezone: str
    when_label: str  # `instant_text`: local with its zone, and UTC
    when_short: str  # the local part alone, for labels beside the full one
    when_iso: str
    deadline_label: str
    deadline_iso: str
    status: Status
    status_label: str  # "Done, 2 min late" where it was
    late_ms: int | None
    result_code: str | None
    result_text: str
    support: str  # the schedule's id, its number, the code: for support only
    requested_by_name: str
    revision: int
    cancelled_label: str | None
    attempts: tuple[AttemptLine, ...]
    next_label: str | None
    next_note: str | None
    # What the page it appears on knows about it.
    cancellable: bool = False
    title: str | None = None
    viewer_label: str | None = None  # due time in the viewer's chosen zone, when another
    stale: str | None = None
    repin_version: str | None = None

    @property
    def change(self) -> str:
        """`publish version ver_3`, for sentences that name the schedule."""
        return f"{self.kind_label.lower()} version {self.version_id}"


@dataclass(frozen=True)
class CardPage:
    """What every card of one page shares: the session's form fields, and how to show it."""

    installation_id: str
    csrf_token: str
    opened_for: str
    context_kind: str
    content: Content | None  # a content page's content (its re-pin forms carry the pins)
    viewer_zone: str | None
    back: tuple[tuple[str, str], ...]  # the view a cancel comes back to (page, filter, zone)

    @property
    def show_content(self) -> bool:
        """The manage view names each card's content; a content page is about one."""
        return self.context_kind == "manage"

    def cancel_href(self, schedule_id: str) -> str:
        """The confirmation page of a cancel, which comes back to this view."""
        query = f"?{urlencode(self.back)}" if self.back else ""
        return f"/installations/{self.installation_id}/schedules/{schedule_id}/cancel{query}"


@dataclass(frozen=True)
class Pager:
    page_number: int
    last_page: int
    total: int
    first_shown: int
    last_shown: int
    prev_href: str | None
    next_href: str | None
    first_href: str
    last_href: str


def card_page(
    session: Session,
    *,
    content: Content | None = None,
    viewer_zone: str | None = None,
    back: Iterable[tuple[str, str]] = (),
) -> CardPage:
    return CardPage(
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        context_kind=session.context_kind,
        content=content,
        viewer_zone=viewer_zone,
        back=tuple(back),
    )


def schedule_card(schedule: Schedule, moment: Moment) -> ScheduleCard:
    zone = schedule.timezone
    last = schedule.attempts[-1] if schedule.attempts else None
    answered = last.http_status if last is not None and last.code == schedule.result_code else None
    next_label, next_note = _next_try(schedule, moment)
    late = _late(schedule)
    deadline = time_labels.deadline_ms(schedule.due_at, moment.max_lateness_ms)
    return ScheduleCard(
        id=schedule.id,
        content_id=schedule.content_id,
        kind=schedule.kind,
        kind_label=KIND.get(schedule.kind, schedule.kind),
        version_id=schedule.version_id,
        due_at=schedule.due_at,
        timezone=zone,
        when_label=instant_text(schedule.due_at, zone),
        when_short=instant_text(schedule.due_at, zone, utc=False),
        when_iso=rfc3339(schedule.due_at),
        deadline_label=instant_text(deadline, zone),
        deadline_iso=rfc3339(deadline),
        status=schedule.status,
        status_label=STATUS[schedule.status] + (f", {duration_text(late)} late" if late else ""),
        late_ms=late,
        result_code=schedule.result_code,
        result_text=explain_result(
            schedule.result_code,
            last.code if last is not None else None,
            last.http_status if last is not None else None,
        ),
        support=_support(schedule, answered),
        requested_by_name=schedule.requested_by_name,
        revision=schedule.revision,
        cancelled_label=_cancelled(schedule),
        attempts=tuple(_attempt_line(a, zone) for a in schedule.attempts),
        next_label=next_label,
        next_note=next_note,
    )


def cards(
    rows: Iterable[Listed], moment: Moment, *, viewer_zone: str | None = None
) -> tuple[ScheduleCard, ...]:
    return tuple(_card(row, moment, viewer_zone) for row in rows)


def _card(row: Listed, moment: Moment, viewer_zone: str | None) -> ScheduleCard:
    schedule = row.schedule
    card = schedule_card(schedule, moment)
    viewer = None
    if viewer_zone is not None and viewer_zone != schedule.timezone:
        viewer = instant_text(schedule.due_at, viewer_zone)
    return replace(
        card,
        cancellable=row.cancellable,
        title=row.title,
        viewer_label=viewer,
        stale=row.stale,
        repin_version=row.repin_version,
    )


def pager(
    href: Callable[[int], str], page_number: int, total: int, shown: int, has_next: bool
) -> Pager:
    """Pages of PAGE_SIZE with `rel` links; `href(n)` is the view's address for page n."""
    last = last_page(total)
    first_shown = (page_number - 1) * PAGE_SIZE + 1
    return Pager(
        page_number=page_number,
        last_page=last,
        total=total,
        first_shown=first_shown,
        last_shown=first_shown + shown - 1,
        prev_href=href(page_number - 1) if 1 < page_number <= last else None,
        next_href=href(page_number + 1) if has_next else None,
        first_href=href(1),
        last_href=href(last),
    )


def _attempt_line(attempt: Attempt, zone: str) -> AttemptLine:
    return AttemptLine(
        number=attempt.number,
        started_label=instant_text(attempt.started_at, zone, seconds=True),
        finished_at=attempt.finished_at,
        code=attempt.code,
        http_status=attempt.http_status,
        text=explain_answer(attempt.code, attempt.http_status),
        support=support_detail(attempt.code, attempt.http_status),
    )


def _late(schedule: Schedule) -> int | None:
    """How late a done schedule's command left (its last attempt's start), when it was."""
    if schedule.status != Status.COMPLETED or not schedule.attempts:
        return None
    return time_labels.lateness_ms(schedule.due_at, schedule.attempts[-1].started_at)


def _support(schedule: Schedule, answered: int | None) -> str:
    detail = support_detail(schedule.result_code, answered)
    return f"schedule {schedule.id}, no. {schedule.revision} of this change" + (
        f", {detail}" if detail else ""
    )


def _cancelled(schedule: Schedule) -> str | None:
    if schedule.status != Status.CANCELLED or schedule.cancelled_at is None:
        return None
    when = instant_text(schedule.cancelled_at, schedule.timezone, seconds=True)
    return f"by {schedule.cancelled_by_name} at {when}"


def _next_try(schedule: Schedule, moment: Moment) -> tuple[str | None, str | None]:
    """The tick that will really send a retrying schedule (its label), or why none will."""
    if schedule.status != Status.RETRYING or schedule.next_attempt_at is None:
        return None, None
    planned = time_labels.planned_try(schedule.next_attempt_at, moment.now_ms)
    deadline = time_labels.deadline_ms(schedule.due_at, moment.max_lateness_ms)
    if planned > deadline:
        return (
            None,
            f"No more tries: the next run comes after {instant_text(deadline, schedule.timezone)},"
            " when the plugin stops sending.",
        )
    return instant_text(planned, schedule.timezone), None
