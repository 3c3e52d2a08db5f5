"""The manage page's Notifications section as its template reads it: each endpoint with its
recent deliveries in the chosen zone, a mark for one failing for an hour, the secret shown
once, and the form to add one (with what was entered, after a refusal)."""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.actions.notifications import EndpointForm, NotificationsView
from scheduling.domain.delivery_policy import FAILING_MARK_AFTER_MS, DeliveryStatus
from scheduling.domain.notifications import (
    DEFAULT_EVENTS,
    EVENT_TYPES,
    KINDS,
    MAX_ENDPOINTS,
    REPLAY_SINCE_HOURS,
)
from scheduling.domain.time_words import duration_text, instant_text
from scheduling.domain.wording import DELIVERY_STATUS, ENDPOINT_KINDS, EVENTS, delivery_answer
from scheduling.http.pages import time_labels
from scheduling.repository.notification_endpoints import Delivery, Endpoint


@dataclass(frozen=True)
class DeliveryLine:
    id: str
    event_label: str
    when_label: str
    status: str
    status_label: str
    answer: str
    next_label: str | None
    can_send_again: bool  # delivered or failed, to an endpoint that is enabled


@dataclass(frozen=True)
class EndpointCard:
    id: str
    kind: str  # webhook or chat
    kind_label: str
    url: str  # a chat endpoint's: its host and last 4 characters
    event_labels: tuple[str, ...]
    disabled_label: str | None
    disabled_reason: str | None  # gone (410) or failing (nothing accepted for days)
    failing_label: str | None  # failing for an hour or more
    test_label: str | None
    secret: str | None  # new: shown this once (a chat endpoint's: its URL)
    deliveries: tuple[DeliveryLine, ...]
    replay_choices: tuple[EventChoice, ...]  # how far back "Replay failures since" reaches


@dataclass(frozen=True)
class EventChoice:
    value: str
    label: str
    checked: bool


@dataclass(frozen=True)
class NotificationsSection:
    endpoints: tuple[EndpointCard, ...]
    can_add: bool
    max_endpoints: int
    url: str
    kinds: tuple[EventChoice, ...]
    choices: tuple[EventChoice, ...]
    problem_code: str | None
    problem: str | None


def notifications_section(view: NotificationsView, zone: str, now_ms: int) -> NotificationsSection:
    refused = view.refused
    form = refused.form if refused is not None else EndpointForm(events=DEFAULT_EVENTS)
    return NotificationsSection(
        endpoints=tuple(_card(e, view, zone, now_ms) for e in view.endpoints),
        can_add=len(view.endpoints) < MAX_ENDPOINTS,
        max_endpoints=MAX_ENDPOINTS,
        url=form.url,
        kinds=tuple(EventChoice(k, ENDPOINT_KINDS[k], k == form.kind) for k in KINDS),
        choices=tuple(EventChoice(e, EVENTS[e], e in form.events) for e in EVENT_TYPES),
        problem_code=refused.code if refused is not None else None,
        problem=refused.message if refused is not None else None,
    )


def _card(endpoint: Endpoint, view: NotificationsView, zone: str, now_ms: int) -> EndpointCard:
    failing = endpoint.failing_since
    return EndpointCard(
        id=endpoint.id,
        kind=endpoint.kind,
        kind_label=ENDPOINT_KINDS.get(endpoint.kind, endpoint.kind),
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
        secret=view.revealed[1] if view.revealed and view.revealed[0] == endpoint.id else None,
        deliveries=tuple(
            _line(d, zone, now_ms, enabled=endpoint.disabled_at is None)
            for d in endpoint.deliveries
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


def _line(delivery: Delivery, zone: str, now_ms: int, *, enabled: bool) -> DeliveryLine:
    waiting = delivery.status == DeliveryStatus.WAITING and delivery.next_attempt_at is not None
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
        can_send_again=enabled
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
