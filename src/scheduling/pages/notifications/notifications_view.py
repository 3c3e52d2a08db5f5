"""The notifications page as its template reads it: each endpoint with its recent deliveries
in the chosen zone (each naming its schedule, linked to its card), a mark for one failing for
an hour, the secret shown once, and the form to add one (with what was entered, after a
refusal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.notifications import EndpointForm, EndpointPreview, NotificationsView
from scheduling.actions.titles import Titles
from scheduling.channels import kinds
from scheduling.domain.delivery_policy import (
    FAILING_MARK_AFTER_MS,
    GIVE_UP_AFTER_MS,
    HOUR_MS,
    DeliveryStatus,
)
from scheduling.domain.notification_events import (
    DEFAULT_EVENTS,
    EVENT_TYPES,
    MAX_ENDPOINTS,
    REPLAY_SINCE_HOURS,
    TEST_EVENT,
)
from scheduling.domain.time_words import duration_text, instant_text
from scheduling.domain.wording import (
    DELIVERY_STATUS,
    EVENTS,
    KIND,
    content_text,
    delivery_answer,
)
from scheduling.http.html import time_labels
from scheduling.http.html.render import Room, rooms
from scheduling.http.html.view_models import CardPage
from scheduling.repository.notification_endpoints import Delivery, Endpoint
from scheduling.repository.sessions import Session


@dataclass(frozen=True)
class DeliveryLine:
    """One delivery, as the notifications page lists it."""

    id: str
    event_label: str
    when_label: str
    status: str
    status_label: str
    answer: str
    next_label: str | None
    schedule_id: str | None  # None: a test event, or a schedule no longer kept
    schedule_label: str  # `Publish version ver_3 of “Summer news”`, or `test`
    schedule_due: str | None  # its due time, in the page's zone
    schedule_href: str | None  # its card
    can_send_again: bool  # delivered or failed, to an endpoint that is enabled


@dataclass(frozen=True)
class Lines:
    """What every delivery row of a page reads: the zone, now, the titles read, and where
    the installation's schedules are listed."""

    zone: str
    now_ms: int
    titles: Titles
    session: Session
    actions: bool = True  # False on a page that only shows them (before a rotation or a delete)

    def card_href(self, schedule_id: str) -> str:
        """The manage view narrowed to that one schedule, in the page's zone."""
        query = (("schedule", schedule_id), ("zone", self.zone))
        return self.session.href(query=query) + f"#schedule-{schedule_id}"


@dataclass(frozen=True)
class EndpointCard:
    """One notification endpoint, as the notifications page shows it."""

    id: str
    kind: str  # its channel kind's name (`channels/kinds.py`)
    kind_label: str
    url: str  # when its URL is its secret: its host and last 4 characters
    event_labels: tuple[str, ...]
    disabled_label: str | None
    disabled_reason: str | None  # gone (410) or failing (nothing accepted for days)
    failing_label: str | None  # failing for an hour or more
    test_label: str | None
    secret: str | None  # new: shown this once (its URL, when that is its secret)
    revealed_name: str  # what its kind calls what `secret` holds
    reveals_url: bool  # its URL is its secret (no signing secret of its own)
    rotates: bool  # its kind's secret may be rotated
    rotated: bool  # its secret replaced one (the receiver must be given the new one)
    delivery_count: int  # all it holds; `deliveries` are the latest
    deliveries: tuple[DeliveryLine, ...]
    replay_choices: tuple[EventChoice, ...]  # how far back "Replay failures since" reaches


@dataclass(frozen=True)
class EventChoice:
    """One event an endpoint may be told of."""

    value: str
    label: str
    checked: bool


@dataclass(frozen=True)
class KindChoice:
    """One kind of endpoint the form offers."""

    value: str
    label: str
    checked: bool
    hint: str  # what the URL's hint adds for it
    told: str  # how the introduction says its endpoints are told
    about: tuple[str, str] | None  # (name, address) linked for more


@dataclass(frozen=True)
class NotificationsSection:
    """The notifications: the endpoints and the form to add one."""

    endpoints: tuple[EndpointCard, ...]
    can_add: bool
    max_endpoints: int
    url: str
    kinds: tuple[KindChoice, ...]
    choices: tuple[EventChoice, ...]
    problem_code: str | None
    problem: str | None
    dev_origins: tuple[str, ...] = ()  # development only: local origins also accepted


def notifications_section(view: NotificationsView, lines: Lines) -> NotificationsSection:
    refused = view.refused
    form = refused.form if refused is not None else EndpointForm(events=DEFAULT_EVENTS)
    return NotificationsSection(
        endpoints=tuple(endpoint_card(e, view.revealed, lines) for e in view.endpoints),
        can_add=len(view.endpoints) < MAX_ENDPOINTS,
        max_endpoints=MAX_ENDPOINTS,
        url=form.url,
        kinds=tuple(
            KindChoice(k.name, k.label, k.name == form.kind, k.url_hint, k.told, k.about)
            for k in kinds.kinds()
        ),
        choices=tuple(EventChoice(e, EVENTS[e], e in form.events) for e in EVENT_TYPES),
        problem_code=refused.code if refused is not None else None,
        problem=refused.message if refused is not None else None,
        dev_origins=view.dev_origins,
    )


def endpoint_card(
    endpoint: Endpoint, revealed: tuple[str, str] | None, lines: Lines
) -> EndpointCard:
    failing = endpoint.failing_since
    zone, now_ms = lines.zone, lines.now_ms
    kind = kinds.kind_of(endpoint.kind) or kinds.default()
    return EndpointCard(
        id=endpoint.id,
        kind=endpoint.kind,
        kind_label=kind.label,
        url=endpoint.url,
        event_labels=tuple(EVENTS[e] for e in endpoint.events),
        disabled_label=(
            None
            if endpoint.disabled_at is None
            else instant_text(endpoint.disabled_at, zone, seconds=True)
        ),
        disabled_reason=(
            None if endpoint.disabled_at is None else endpoint.disabled_reason or "gone"
        ),
        failing_label=(
            _since(failing, now_ms)
            if failing is not None and now_ms - failing >= FAILING_MARK_AFTER_MS
            else None
        ),
        test_label=_test(endpoint, zone),
        secret=revealed[1] if revealed and revealed[0] == endpoint.id else None,
        revealed_name=kind.revealed_name,
        reveals_url=kind.url_is_secret,
        rotates=kind.rotates,
        rotated=endpoint.secret_rotated_at > endpoint.created_at,
        delivery_count=endpoint.delivery_count,
        deliveries=tuple(
            _line(d, lines, enabled=endpoint.disabled_at is None) for d in endpoint.deliveries
        ),
        replay_choices=tuple(
            EventChoice(str(hours), _hours_words(hours), hours == 24)
            for hours in REPLAY_SINCE_HOURS
        ),
    )


def _hours_words(hours: int) -> str:
    """`1 hour ago`, `3 days ago`."""
    if hours % 24 == 0:
        days = hours // 24
        return f"{days} day{'s' if days > 1 else ''} ago"
    return f"{hours} hour{'s' if hours > 1 else ''} ago"


def _line(delivery: Delivery, lines: Lines, *, enabled: bool) -> DeliveryLine:
    zone, now_ms = lines.zone, lines.now_ms
    waiting = delivery.status == DeliveryStatus.WAITING and delivery.next_attempt_at is not None
    about = delivery.schedule
    if about is None:
        label = "test" if delivery.event_type == TEST_EVENT else "a schedule no longer kept"
    else:
        what = content_text(about.content_id, lines.titles.title(about.content_id))
        label = f"{KIND.get(about.kind, about.kind)} version {about.version_id} of {what}"
    return DeliveryLine(
        id=delivery.id,
        event_label=EVENTS.get(delivery.event_type, delivery.event_type),
        when_label=instant_text(delivery.created_at, zone, seconds=True),
        status=delivery.status.value,
        status_label=DELIVERY_STATUS[delivery.status.value],
        answer=(
            delivery_answer(delivery.last_http_status, delivery.last_error)
            if delivery.attempt_count
            else ""
        ),
        next_label=(
            instant_text(time_labels.planned_try(delivery.next_attempt_at, now_ms), zone)
            if waiting and delivery.next_attempt_at is not None and delivery.attempt_count
            else None
        ),
        schedule_id=about.id if about else None,
        schedule_label=label,
        schedule_due=instant_text(about.due_at, zone) if about else None,
        schedule_href=lines.card_href(about.id) if about else None,
        can_send_again=lines.actions
        and enabled
        and delivery.status in (DeliveryStatus.DELIVERED, DeliveryStatus.FAILED),
    )


def _test(endpoint: Endpoint, zone: str) -> str | None:
    if endpoint.tested_at is None or endpoint.test_result is None:
        return None
    result = endpoint.test_result
    answered = f"HTTP {result}" if result.isdigit() else delivery_answer(None, result) or result
    return f"{answered} at {instant_text(endpoint.tested_at, zone, seconds=True)}"


def _since(since: int, now_ms: int) -> str:
    return duration_text(now_ms - since)


@dataclass(frozen=True)
class EndpointConfirmPage:
    """The page that asks before rotating an endpoint's secret or deleting it."""

    template: ClassVar[str] = "endpoint_confirm.html"

    title: str
    person_name: str
    installation_id: str
    csrf_token: str
    opened_for: str
    tab: str | None
    action: str  # rotate | delete
    button: str
    keep: str
    endpoint: EndpointCard
    zone: str
    back: tuple[tuple[str, str], ...]  # the notifications page's zone, posted along
    back_href: str
    rooms: tuple[Room, ...]
    retry_hours: int = GIVE_UP_AFTER_MS // HOUR_MS  # how long a delivery is tried


_ASKS = {
    "rotate": (
        "Rotate the signing secret?",
        "Rotate the secret",
        "Keep the current secret, go back",
    ),
    "delete": ("Delete this endpoint?", "Delete the endpoint", "Keep it, go back"),
}


def endpoint_confirm_page(
    session: Session, preview: EndpointPreview, action: str, zone: str
) -> EndpointConfirmPage:
    title, button, keep = _ASKS[action]
    lines = Lines(zone, preview.now_ms, preview.titles, session, actions=False)
    back = (("zone", zone),)
    return EndpointConfirmPage(
        title=title,
        person_name=session.person_name,
        installation_id=session.installation_id,
        csrf_token=session.csrf_token,
        opened_for=session.opened_for,
        tab=session.tab,
        action=action,
        button=button,
        keep=keep,
        endpoint=endpoint_card(preview.endpoint, None, lines),
        zone=zone,
        back=back,
        back_href=session.href("/notifications", back),
        rooms=rooms(session, "notifications"),
    )


@dataclass(frozen=True)
class NotificationsPage:
    """A manage launch's notifications page."""

    template: ClassVar[str] = "notifications.html"

    title: str
    person_name: str
    installation_id: str
    card_page: CardPage  # what its forms carry
    zone: str
    notifications: NotificationsSection
    notice: str | None  # what the session's last action did, said once
    rooms: tuple[Room, ...]
    dee_wan_href: str
