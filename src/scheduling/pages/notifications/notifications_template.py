"""The notifications page (a manage launch's): endpoints, their deliveries, the form to add
one; and the table of an endpoint's deliveries, which its confirmations show too."""

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
