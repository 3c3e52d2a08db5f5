"""The manage view's Notifications section as its template reads it: each endpoint with its
recent deliveries, a mark for one failing for an hour, the secret shown once, the form to add
one; and the pages that ask before a rotation or a delete.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.listing import Titles
from scheduling.actions.notifications import EndpointForm, EndpointPreview, NotificationsView
from scheduling.channels import kinds
from scheduling.domain.notifications import (
    DEFAULT_EVENTS,
    EVENT_TYPES,
    FAILING_MARK_AFTER_MS,
    GIVE_UP_AFTER_MS,
    HOUR_MS,
    MAX_ENDPOINTS,
    REPLAY_SINCE_HOURS,
    TEST_EVENT,
    DeliveryStatus,
)
from scheduling.domain.times import duration_text, instant_text
from scheduling.domain.wording import DELIVERY_STATUS, EVENTS, KIND, content_text, delivery_answer
from scheduling.http.html.render import Room, planned_try, rooms
from scheduling.http.html.view_models import CardPage
from scheduling.repository.installations import Session
from scheduling.repository.notification_endpoints import Delivery, Endpoint

# -- the section's model ---------------------------------------------------------------------------


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
            duration_text(now_ms - failing)
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
            instant_text(planned_try(delivery.next_attempt_at, now_ms), zone)
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


# -- the templates ---------------------------------------------------------------------------------

# `e`: an endpoint card; `zone`: the zone its times are in.
DELIVERIES = """{% from "cards.html" import session_fields %}
<table class="deliveries">
  <caption>{% if e.delivery_count > e.deliveries|length %}The latest {{ e.deliveries|length }} of its {{ e.delivery_count }} deliveries{% else %}Recent deliveries{% endif %} (times in {{ zone }})</caption>
  <thead><tr><th scope="col">Event</th><th scope="col">Schedule</th><th scope="col">Time</th><th scope="col">Status</th><th scope="col">Next try</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
  <tbody>
  {% for d in e.deliveries %}
    <tr data-delivery-id="{{ d.id }}" data-delivery-status="{{ d.status }}"{% if d.schedule_id %} data-schedule-id="{{ d.schedule_id }}"{% endif %}>
      <td data-label="Event">{{ d.event_label }}</td>
      <td data-label="Schedule">{% if d.schedule_href %}<a href="{{ d.schedule_href }}">{{ d.schedule_label }}</a>, due {{ d.schedule_due }}{% else %}{{ d.schedule_label }}{% endif %}</td>
      <td data-label="Time">{{ d.when_label }}</td>
      <td data-label="Status"><span class="status delivery-{{ d.status }}">{{ d.status_label }}</span>{% if d.answer %} ({{ d.answer }}){% endif %}</td>
      <td data-label="Next try"{% if not d.next_label %} class="none"{% endif %}>{{ d.next_label or "—" }}</td>
      <td data-label="Action">{% if d.can_send_again %}<form method="post" action="/installations/{{ installation_id }}/notifications/{{ e.id }}/deliveries/{{ d.id }}/send-again">
        {{ session_fields(card_page.csrf_token, card_page.opened_for, card_page.tab) }}
        <button type="submit" class="secondary">Send again<span class="visually-hidden"> the {{ d.event_label }} of {{ d.when_label }}</span></button>
      </form>{% endif %}</td>
    </tr>
  {% endfor %}
  </tbody>
</table>
"""

NOTIFICATIONS = """{% extends "base.html" %}
{% from "cards.html" import session_fields %}
{% set n = notifications %}
{% block main %}
<section id="notifications" aria-labelledby="notifications-title" class="notifications">
  <h1 id="notifications-title">Notifications</h1>
  {% if notice %}<div class="notice" role="status" data-done><p>{{ notice }}</p></div>{% endif %}
  <p>When a schedule cannot be kept, Scheduling tells the endpoints below within a minute: {% for k in n.kinds %}{{ k.told }}{% if k.about %} (see <a href="{{ k.about[1] }}">{{ k.about[0] }}</a>){% endif %}{% if not loop.last %}, or {% endif %}{% endfor %}.</p>
  {% for e in n.endpoints %}
  <article class="endpoint{% if e.failing_label %} is-failing{% endif %}" data-endpoint-id="{{ e.id }}" data-endpoint-kind="{{ e.kind }}"{% if e.disabled_label %} data-disabled="true"{% endif %}{% if e.failing_label %} data-failing="true"{% endif %} aria-labelledby="endpoint-{{ e.id }}">
    <h2 id="endpoint-{{ e.id }}" class="endpoint-url"><code>{{ e.url }}</code></h2>
    {% if e.secret and e.reveals_url %}
    <div class="notice secret" role="status">
      <p><strong>{{ e.revealed_name }} saved.</strong> It is shown this once, to check it; Scheduling keeps it only sealed, and shows only its host and last 4 characters from now on.</p>
      <p><code class="secret-value" data-secret-url>{{ e.secret }}</code></p>
    </div>
    {% elif e.secret %}
    <div class="notice secret" role="status">
      <p><strong>{% if e.rotated %}New {{ e.revealed_name|lower }}{% else %}{{ e.revealed_name }}{% endif %}: copy it now.</strong> It is shown this once; Scheduling keeps it only sealed and will not show it again.{% if e.rotated %} The old secret no longer signs anything: paste this one into the receiver now, as until then it cannot verify the deliveries (they are tried again).{% endif %}</p>
      <p><code class="secret-value" data-signing-secret>{{ e.secret }}</code></p>
    </div>
    {% endif %}
    {% if e.failing_label %}<p class="problem failing" role="status">Failing for {{ e.failing_label }}: its deliveries have not been accepted since then. They are tried again; check the receiver.</p>{% endif %}
    {% if e.disabled_label %}<div class="problem" data-disabled-reason="{{ e.disabled_reason }}">
      {% if e.disabled_reason == "failing" %}<p>Disabled at {{ e.disabled_label }}: it accepted nothing it was sent for 5 days. Nothing more is sent to it. Once the receiver works again, enable it, then replay what failed.</p>
      {% else %}<p>Disabled at {{ e.disabled_label }}: it answered <code>410 Gone</code>. Nothing more is sent to it; enable it again if its receiver is back, or delete it.</p>{% endif %}
      <form method="post" action="/installations/{{ installation_id }}/notifications/{{ e.id }}/enable">
        {{ session_fields(card_page.csrf_token, card_page.opened_for, card_page.tab) }}
        <button type="submit" class="secondary">Enable again<span class="visually-hidden"> {{ e.url }}</span></button>
      </form>
    </div>{% endif %}
    <dl class="facts">
      <dt>Kind</dt>
      <dd>{{ e.kind_label }}</dd>
      <dt>Tells of</dt>
      <dd>{{ e.event_labels|join("; ") }}</dd>
      {% if e.test_label %}<dt>Last test</dt><dd data-test-result>{{ e.test_label }}</dd>{% endif %}
    </dl>
    <div class="endpoint-actions">
      <form method="post" action="/installations/{{ installation_id }}/notifications/{{ e.id }}/test">
        {{ session_fields(card_page.csrf_token, card_page.opened_for, card_page.tab) }}
        <button type="submit">Send test event<span class="visually-hidden"> to {{ e.url }}</span></button>
      </form>
      {% if e.rotates %}
      <a class="button secondary" href="/installations/{{ installation_id }}/notifications/{{ e.id }}/rotate?{% if card_page.tab %}tab={{ card_page.tab }}&amp;{% endif %}zone={{ zone|urlencode }}">Rotate secret…<span class="visually-hidden"> of {{ e.url }}</span></a>
      {% endif %}
      <a class="button danger" href="/installations/{{ installation_id }}/notifications/{{ e.id }}/delete?{% if card_page.tab %}tab={{ card_page.tab }}&amp;{% endif %}zone={{ zone|urlencode }}">Delete…<span class="visually-hidden"> {{ e.url }}</span></a>
    </div>
    {% if not e.disabled_label %}
    <form method="post" action="/installations/{{ installation_id }}/notifications/{{ e.id }}/replay" class="replay" data-form="replay">
      {{ session_fields(card_page.csrf_token, card_page.opened_for, card_page.tab) }}
      <label for="replay-{{ e.id }}">Replay failures since</label>
      <select id="replay-{{ e.id }}" name="since_hours">
        {% for c in e.replay_choices %}<option value="{{ c.value }}"{% if c.checked %} selected{% endif %}>{{ c.label }}</option>{% endfor %}
      </select>
      <button type="submit" class="secondary">Replay<span class="visually-hidden"> failures to {{ e.url }}</span></button>
    </form>
    {% endif %}
    {% if e.deliveries %}
    {% include "deliveries.html" %}
    {% else %}
    <p class="empty">Nothing sent to it yet.</p>
    {% endif %}
  </article>
  {% endfor %}

  {% if n.problem and not n.can_add %}<div class="problem" role="alert" id="endpoint-problem" data-error-code="{{ n.problem_code }}" tabindex="-1" autofocus><p>{{ n.problem }}</p></div>{% endif %}
  {% if n.can_add %}
  <form method="post" action="/installations/{{ installation_id }}/notifications" data-form="notification-endpoint" class="endpoint-form" novalidate>
    {{ session_fields(card_page.csrf_token, card_page.opened_for, card_page.tab) }}
    <h2>Add an endpoint</h2>
    {% if n.problem %}<div class="problem" role="alert" id="endpoint-problem" data-error-code="{{ n.problem_code }}" tabindex="-1" autofocus><p>{{ n.problem }}</p></div>{% endif %}
    <fieldset>
      <legend>Send it</legend>
      {% for k in n.kinds %}
      <div class="choice"><input type="radio" id="kind-{{ k.value }}" name="kind" value="{{ k.value }}"{% if k.checked %} checked{% endif %}><label for="kind-{{ k.value }}">{{ k.label }}</label></div>
      {% endfor %}
    </fieldset>
    <div class="field">
      <label for="endpoint-url">Endpoint URL</label>
      <p class="hint" id="endpoint-url-hint">An https:// address on the public internet, at most 2 KiB{% if n.dev_origins %}; in development also an address on <span data-dev-origins>{% for o in n.dev_origins %}{{ o }}{% if not loop.last %} or {% endif %}{% endfor %}</span> (<code>DEE_WAN_DEV_ORIGINS</code>){% endif %}.{% for k in n.kinds %}{% if k.hint %} {{ k.hint }}{% endif %}{% endfor %}</p>
      <input type="url" id="endpoint-url" name="url" value="{{ n.url }}" autocomplete="off" spellcheck="false" aria-describedby="endpoint-url-hint{% if n.problem %} endpoint-problem{% endif %}"{% if n.problem_code == "invalid_endpoint_url" %} aria-invalid="true"{% endif %}>
    </div>
    <fieldset>
      <legend>Tell it when</legend>
      {% for c in n.choices %}
      <div class="choice"><input type="checkbox" id="event-{{ loop.index }}" name="events" value="{{ c.value }}"{% if c.checked %} checked{% endif %}><label for="event-{{ loop.index }}">{{ c.label }} <code>{{ c.value }}</code></label></div>
      {% endfor %}
    </fieldset>
    <button type="submit">Add endpoint</button>
  </form>
  {% else %}
  <p>This installation has {{ n.max_endpoints }} endpoints, the most it may have. Delete one to add another.</p>
  {% endif %}
</section>
{% endblock %}
"""

# The page that asks before a rotation or a delete: the endpoint, what would be lost, the form.
ENDPOINT_CONFIRM = """{% extends "base.html" %}
{% from "cards.html" import session_fields %}
{% set e = endpoint %}
{% block main %}
<h1>{{ title }}</h1>
<div class="confirm" data-endpoint-confirmation="{{ action }}" data-endpoint-id="{{ e.id }}">
<dl class="facts">
  <dt>Endpoint</dt><dd class="endpoint-url"><code>{{ e.url }}</code></dd>
  <dt>Tells of</dt><dd>{{ e.event_labels|join("; ") }}</dd>
  <dt>Deliveries</dt><dd>{% if e.delivery_count %}{{ e.delivery_count }}{% else %}none yet{% endif %}</dd>
</dl>
{% if action == "delete" %}
<p>Deleting it removes the endpoint and {% if e.delivery_count == 1 %}its delivery{% elif e.delivery_count %}all {{ e.delivery_count }} of its deliveries{% else %}its settings{% endif %} from Scheduling for good: {% if e.delivery_count %}they cannot be seen again, and {% endif %}nothing more is sent to it, not even what is still waiting. The receiver itself is not changed.</p>
{% else %}
<p>A new signing secret replaces the current one at once: every later delivery, and every retry of one still waiting, is signed with the new secret. The receiver cannot verify them until you paste the new secret into it; meanwhile it refuses them, and each is tried again for up to {{ retry_hours }} hours after its event. The new secret is shown once, on the next page.</p>
{% endif %}
{% if e.deliveries %}{% include "deliveries.html" %}{% endif %}
<form method="post" action="/installations/{{ installation_id }}/notifications/{{ e.id }}/{{ action }}" class="endpoint-confirm">
  {{ session_fields(csrf_token, opened_for, tab) }}
  {% for name, value in back %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
  <div class="inline">
    <button type="submit" class="danger">{{ button }}</button>
    <a href="{{ back_href }}">{{ keep }}</a>
  </div>
</form>
</div>
{% endblock %}
"""
