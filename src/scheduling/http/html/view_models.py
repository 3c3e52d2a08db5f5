"""What the templates show, as frozen values: each schedule as a card, its instants written the
one way (`times.instant_text`), in plain words with codes kept for support; the settings
every card of a page shares; the pager."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from scheduling.actions.listing import Listed, last_page
from scheduling.domain.outcomes import WAITING, Attempt, Status, group_of
from scheduling.domain.schedules import (
    Conflict,
    Schedule,
    ShownVersions,
    conflicts,
    needs_repin_text,
)
from scheduling.domain.times import duration_text, instant_text, rfc3339
from scheduling.domain.wording import (
    KIND,
    STATUS,
    answered_status,
    explain_answer,
    explain_result,
    support_detail,
)
from scheduling.http.html.render import deadline_ms, lateness_ms, planned_try
from scheduling.repository.installations import Session
from scheduling.repository.schedules import PAGE_SIZE


@dataclass(frozen=True)
class Moment:
    """What every card is read against: now, and how late the plugin may still send."""

    now_ms: int
    max_lateness_ms: int


@dataclass(frozen=True)
class AttemptLine:
    """One attempt of a schedule, as its card lists it."""

    started_label: str
    finished_at: int | None
    text: str
    support: str  # the status and code, for support


@dataclass(frozen=True)
class RetryOffer:
    """A refused schedule's Try again, on a content page whose person may make its change."""

    version: str | None  # the version it pins instead, when the refused pin is out of date
    replaces: str | None  # what it does to the live schedule of its change, said beforehand


@dataclass(frozen=True)
class ReleaseRef:
    """The release a card's schedule is an item of, as a content page names it."""

    id: str
    name: str
    status: str  # as shown (`Release.shown`)


@dataclass(frozen=True)
class ScheduleCard:
    """One schedule, as the pages show it."""

    id: str
    content_id: str
    kind_label: str
    version_id: str
    due_at: int
    timezone: str
    local_time: str  # as entered, which a move form starts from
    fold: str | None
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
    cancelled_label: str | None
    attempts: tuple[AttemptLine, ...]
    next_label: str | None
    next_note: str | None
    group: str  # the manage view's group: a settled refusal is finished
    settled: bool  # refused, and dismissed or done by a later schedule since
    ended_by: str | None  # which cap ended it (`retry_exhausted`)
    dismissed_label: str | None  # "by … at …"
    resolved_by: str | None  # the later schedule of the same change that was done
    # What the page it appears on knows about it.
    cancellable: bool = False
    title: str | None = None
    viewer_label: str | None = None  # due time in the viewer's chosen zone, when another
    stale: str | None = None
    repin_version: str | None = None
    retry: RetryOffer | None = None
    dismissable: bool = False
    conflict: Conflict | None = None  # it collides with the other kind's waiting schedule
    needs_repin: str | None = None  # the other kind's completion put its pin out of date
    release_id: str | None = None  # an item of a release: moved or sent with it, never alone
    release: ReleaseRef | None = None

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
    pins: ShownVersions | None  # what a content page shows (its cards' forms carry it)
    back: tuple[tuple[str, str], ...]  # the view a cancel or a dismiss comes back to
    unread: bool = False  # Dee Wan could not be read: what it allows now is not known
    tab: str | None = None  # the launch the page belongs to, which its forms and links carry

    @property
    def show_content(self) -> bool:
        """The manage view and a release's page name each card's content; a content page is
        about one."""
        return self.context_kind != "content"

    def cancel_href(self, schedule_id: str) -> str:
        """The confirmation page of a cancel, which comes back to this view."""
        pairs = ((("tab", self.tab),) if self.tab else ()) + self.back
        query = f"?{urlencode(pairs)}" if pairs else ""
        return f"/installations/{self.installation_id}/schedules/{schedule_id}/cancel{query}"


@dataclass(frozen=True)
class Pager:
    """Where a page of a listing stands, and links to the others."""

    page_number: int
    last_page: int
    total: int
    first_shown: int
    last_shown: int
    prev_href: str | None
    next_href: str | None
    first_href: str


def card_page(
    session: Session,
    *,
    pins: ShownVersions | None = None,
    back: Iterable[tuple[str, str]] = (),
    unread: bool = False,
) -> CardPage:
    return CardPage(
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        context_kind=session.context_kind,
        pins=pins,
        back=tuple(back),
        unread=unread,
        tab=session.tab,
    )


def schedule_card(schedule: Schedule, moment: Moment, zone: str | None = None) -> ScheduleCard:
    """`zone`: the zone the page writes the card's other instants in (when it was done, its
    tries, its next try), the schedule's own by default; its due time is always said in its
    own zone too."""
    own = schedule.timezone
    zone = zone or own
    last = schedule.attempts[-1] if schedule.attempts else None
    next_label, next_note, ending = _next_try(schedule, moment, zone)
    late = _late(schedule)
    deadline = deadline_ms(schedule.due_at, moment.max_lateness_ms)
    label = STATUS[schedule.status] + (f", {duration_text(late)} late" if late else "")
    return ScheduleCard(
        id=schedule.id,
        content_id=schedule.content_id,
        kind_label=KIND.get(schedule.kind, schedule.kind),
        version_id=schedule.version_id,
        due_at=schedule.due_at,
        timezone=own,
        local_time=schedule.local_time,
        fold=schedule.fold,
        when_label=instant_text(schedule.due_at, own),
        when_short=instant_text(schedule.due_at, own, utc=False),
        when_iso=rfc3339(schedule.due_at),
        deadline_label=instant_text(deadline, own),
        deadline_iso=rfc3339(deadline),
        status=schedule.status,
        status_label=ENDING if ending else label,
        late_ms=late,
        result_code=schedule.result_code,
        result_text=explain_result(
            schedule.result_code,
            last,
            ended_by=schedule.ended_by,
            tries=schedule.attempt_count,
            lateness_ms=moment.max_lateness_ms,
        ),
        support=_support(schedule, answered_status(schedule.result_code, last)),
        requested_by_name=schedule.requested_by_name,
        cancelled_label=_by_whom(schedule.cancelled_by_name, schedule.cancelled_at, zone),
        attempts=tuple(_attempt_line(a, zone) for a in schedule.attempts),
        next_label=next_label,
        next_note=next_note,
        group=group_of(schedule.status, schedule.settled, schedule.needs_repin),
        settled=schedule.settled,
        ended_by=schedule.ended_by,
        dismissed_label=_by_whom(schedule.dismissed_by_name, schedule.dismissed_at, zone),
        resolved_by=schedule.resolved_by,
        release_id=schedule.release_id,
    )


def cards(
    rows: Iterable[Listed],
    moment: Moment,
    *,
    viewer_zone: str | None = None,
    live: Iterable[Schedule] = (),
) -> tuple[ScheduleCard, ...]:
    """`live`: the content's live schedules, which a Try again would replace, and which the
    listed ones may collide with (`schedules.conflicts`)."""
    rows = tuple(rows)
    live = tuple(live)
    by_kind = {s.kind: s for s in live}
    found = conflicts({s.id: s for s in (*live, *(r.schedule for r in rows))}.values())
    return tuple(_card(row, moment, viewer_zone, by_kind, found) for row in rows)


def _card(
    row: Listed,
    moment: Moment,
    viewer_zone: str | None,
    live: dict[str, Schedule],
    found: dict[str, Conflict],
) -> ScheduleCard:
    schedule = row.schedule
    card = schedule_card(schedule, moment, viewer_zone)
    viewer = None
    if viewer_zone is not None and viewer_zone != schedule.timezone:
        viewer = instant_text(schedule.due_at, viewer_zone)
    retry = None
    if row.retry_pin is not None:
        replaced = live.get(schedule.kind)
        retry = RetryOffer(
            version=row.retry_pin if row.retry_pin != schedule.version_id else None,
            replaces=replaces_text(replaced, "Trying again") if replaced else None,
        )
    return replace(
        card,
        cancellable=row.cancellable,
        title=row.title,
        viewer_label=viewer,
        stale=row.stale,
        repin_version=row.repin_version,
        retry=retry,
        dismissable=row.dismissable,
        conflict=found.get(schedule.id),
        needs_repin=needs_repin_text(schedule, viewer_zone) if schedule.needs_repin else None,
    )


def replaces_text(live: Schedule, doing: str = "A new schedule") -> str:
    """What making another schedule of its change does to the live one, said beforehand:
    `A new schedule replaces the waiting one of version ver_3 for …: that one will not be
    sent.`"""
    when = instant_text(live.due_at, live.timezone)
    if live.status in WAITING:
        return (
            f"{doing} replaces the waiting one of version {live.version_id}"
            f" for {when}: that one will not be sent."
        )
    return (
        f"The schedule for {when} is being sent to Dee Wan right now; "
        "a new one can be made once it is done."
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
    )


def _attempt_line(attempt: Attempt, zone: str) -> AttemptLine:
    return AttemptLine(
        started_label=instant_text(attempt.started_at, zone, seconds=True),
        finished_at=attempt.finished_at,
        text=explain_answer(attempt.code, attempt.http_status),
        support=support_detail(attempt.code, attempt.http_status),
    )


def _late(schedule: Schedule) -> int | None:
    """How late a done schedule's command left (its last attempt's start), when it was."""
    if schedule.status != Status.COMPLETED or not schedule.attempts:
        return None
    return lateness_ms(schedule.due_at, schedule.attempts[-1].started_at)


def _support(schedule: Schedule, answered: int | None) -> str:
    detail = support_detail(schedule.result_code, answered)
    return f"schedule {schedule.id}, no. {schedule.revision} of this change" + (
        f", {detail}" if detail else ""
    )


def _by_whom(name: str | None, at: int | None, zone: str) -> str | None:
    """`by Ada Lovelace at …`: who cancelled or dismissed it, and when."""
    if name is None or at is None:
        return None
    return f"by {name} at {instant_text(at, zone, seconds=True)}"


# A retrying schedule whose next try would come past its lateness cap.
ENDING = "Ends not done at the next run"


def _next_try(schedule: Schedule, moment: Moment, zone: str) -> tuple[str | None, str | None, bool]:
    """The tick that will really send a retrying schedule (its label); or, when none will,
    why, and that the next tick ends it."""
    if schedule.status != Status.RETRYING or schedule.next_attempt_at is None:
        return None, None, False
    planned = planned_try(schedule.next_attempt_at, moment.now_ms)
    deadline = deadline_ms(schedule.due_at, moment.max_lateness_ms)
    if planned > deadline:
        # The run that takes it up again finds it past the cap and ends it unsent.
        return (
            None,
            f"No more tries: nothing is sent after {instant_text(deadline, zone)}, so the next"
            f" run, at {instant_text(planned, zone)}, ends it not done.",
            True,
        )
    return instant_text(planned, zone), None, False
