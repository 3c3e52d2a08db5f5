"""One schedule as a card, shared by the content page and the manage view.

A card carries its facts as `data-*` attributes (id, status, result code, a
stale pin) so tests and tools read the page the way a person reads the text.
"""

PAGER = """{% macro page_links(p) %}
{% if p.prev_href or p.next_href %}
<nav class="pager" aria-label="Pages">
  {% if p.prev_href %}<a rel="prev" href="{{ p.prev_href }}">Previous page<span class="visually-hidden"> ({{ p.page_number - 1 }} of {{ p.last_page }})</span></a>{% endif %}
  {% if p.next_href %}<a rel="next" href="{{ p.next_href }}">Next page<span class="visually-hidden"> ({{ p.page_number + 1 }} of {{ p.last_page }})</span></a>{% endif %}
</nav>
{% endif %}
{% endmacro %}
"""

PIN_FIELDS = """{% macro pin_fields(content) %}
  <input type="hidden" name="version_id" value="{{ content.current_version_id }}">
  <input type="hidden" name="published_version_id" value="{{ content.published_version_id or '' }}">
{% endmacro %}
"""

CARDS = """{% from "pin_fields.html" import pin_fields %}
{% macro session_fields(csrf_token, opened_for) %}
  <input type="hidden" name="csrf_token" value="{{ csrf_token }}">
  <input type="hidden" name="opened_for" value="{{ opened_for }}">
{% endmacro %}

{% macro schedule_card(s, page, level=3) %}
  <li class="schedule{% if s.stale %} is-stale{% endif %}" id="schedule-{{ s.id }}" data-schedule-id="{{ s.id }}" data-status="{{ s.status }}"{% if s.result_code %} data-result-code="{{ s.result_code }}"{% endif %}{% if s.stale %} data-pin-stale="true"{% endif %} data-content-id="{{ s.content_id }}">
    <div class="card-head">
    <h{{ level }}>{{ s.kind_label }} version <code>{{ s.version_id }}</code>{% if page.show_content %} of {% if s.title is not none %}“{{ s.title }}” (<code>{{ s.content_id }}</code>){% else %}content <code>{{ s.content_id }}</code>{% endif %}{% endif %}</h{{ level }}>
    {% if s.cancellable %}
    <form method="post" action="/installations/{{ page.installation_id }}/schedules/{{ s.id }}/cancel" class="cancel">
      {{ session_fields(page.csrf_token, page.opened_for) }}
      {% for name, value in page.back %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
      <button type="submit">Cancel<span class="visually-hidden"> {{ s.kind_label|lower }} of {{ s.version_id }} at {{ s.local_label }}</span></button>
    </form>
    {% endif %}
    </div>
    <dl>
      <dt>When</dt>
      <dd>{% if s.viewer_label %}<span class="viewer">{{ s.viewer_label }} in {{ page.viewer_zone }}</span>, entered as {% endif %}{% if s.timezone == "UTC" %}<span class="utc">{{ s.utc_label }}</span>{% else %}{{ s.local_label }} <span class="tz">({{ s.timezone }})</span> · <span class="utc">{{ s.utc_label }}</span>{% endif %}</dd>
      <dt>Status</dt>
      <dd><span class="status status-{{ s.status }}">{{ s.status_label }}</span>{% if s.cancelled_label %} {{ s.cancelled_label }}{% endif %}{% if s.next_label %}, next try {{ s.next_label }}{% endif %}{% if s.next_note %}. {{ s.next_note }}{% endif %}</dd>
      {% if s.result_code %}
      <dt>Result</dt>
      <dd><code>{{ s.result_code }}</code>: {{ s.result_text }}</dd>
      {% endif %}
      <dt>Requested by</dt>
      <dd>{{ s.requested_by_name }} (schedule no. {{ s.revision }} of this change for this content)</dd>
    </dl>
    {% if s.stale %}
    <div class="stale">
      <p><strong>Out of date.</strong> {{ s.stale }}</p>
      {% if s.repin_version %}
      <form method="post" action="/installations/{{ page.installation_id }}/schedules" class="repin">
        {{ session_fields(page.csrf_token, page.opened_for) }}
        {{ pin_fields(page.content) }}
        <input type="hidden" name="repin_of" value="{{ s.id }}">
        <button type="submit">Pin {{ s.repin_version }} instead, same time<span class="visually-hidden"> ({{ s.kind_label|lower }} at {{ s.local_label }})</span></button>
      </form>
      {% elif page.context_kind == "content" %}
      <p>You may not make this change now, so it cannot be pinned again from here.</p>
      {% else %}
      <p>To pin it again, use <strong>Schedule</strong> on this content in Dee Wan.</p>
      {% endif %}
    </div>
    {% endif %}
    {% if s.attempts %}
    <details>
      <summary>Attempts ({{ s.attempts|length }})</summary>
      <ol class="attempts">
      {% for a in s.attempts %}
        <li>Started {{ a.started_label }}:
          {% if a.finished_at is none %}<strong>outcome unknown</strong> (no answer was recorded){% else %}{% if a.http_status %}HTTP {{ a.http_status }}, {% endif %}<code>{{ a.code }}</code>. {{ a.text }}{% endif %}
        </li>
      {% endfor %}
      </ol>
    </details>
    {% endif %}
  </li>
{% endmacro %}

{% macro schedule_list(schedules, page, label, level=3) %}
{% if schedules %}
<ul class="schedules" aria-label="{{ label }}">
{% for s in schedules %}{{ schedule_card(s, page, level) }}{% endfor %}
</ul>
{% else %}
<p>No schedules yet.</p>
{% endif %}
{% endmacro %}
"""
