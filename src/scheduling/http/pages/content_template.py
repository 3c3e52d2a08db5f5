"""The content page: what Dee Wan reports about the content, the form, and its schedules.

The form does the time arithmetic for the editor without any script: the time
now in the form's zone, a suggested time, both instants of a wall time that
happens twice, and a receipt that says until when the plugin keeps trying.
"""

CONTENT = """{% extends "base.html" %}
{% from "cards.html" import schedule_list, session_fields %}
{% from "pin_fields.html" import pin_fields %}
{% from "pager.html" import page_links %}
{% block title %}{% if error %}Not scheduled: {% endif %}{{ title }}{% endblock %}
{% block main %}
<h1>Schedule “{{ content.title }}”</h1>
<dl class="facts">
  <dt>Model</dt><dd>{{ content.model }}</dd>
  <dt>Locale</dt><dd>{{ content.locale }}</dd>
  <dt>Current version</dt><dd><code>{{ content.current_version_id }}</code></dd>
  <dt>Published version</dt><dd>{% if content.published_version_id %}<code>{{ content.published_version_id }}</code>{% else %}none{% endif %}</dd>
  {% if content.primary_id != content.id %}<dt>Translation of</dt><dd><code>{{ content.primary_id }}</code> (schedules apply to the whole translation group)</dd>{% endif %}
</dl>

{% if flash %}<div class="notice" role="status"><p>{{ flash }}</p></div>{% endif %}
{% if stale %}<div class="warning" role="status" data-stale-count="{{ stale|length }}"><p>{% if stale|length == 1 %}One waiting schedule pins{% else %}{{ stale|length }} waiting schedules pin{% endif %} what Dee Wan no longer reports, so it would be refused: <a href="#schedule-{{ stale[0].id }}">see {% if stale|length == 1 %}it{% else %}them{% endif %} below</a>.</p></div>{% endif %}
{% if notice %}
{% set made = notice.card %}
<div class="notice" role="status" data-confirmation="{{ made.id }}">
  <p>Scheduled: {{ made.kind_label|lower }} the pinned version <code>{{ made.version_id }}</code> at {{ made.local_label }} ({{ made.timezone }}), which is {{ made.utc_label }}.{% if notice.superseded %} It replaces the earlier schedule.{% endif %}</p>
  <p data-deadline="{{ made.deadline_label }}">If Dee Wan cannot be reached, nothing is sent after {{ made.deadline_label }}.</p>
  {% if fold_ignored %}<p data-fold-ignored="{{ fold_ignored }}">You chose the {{ fold_ignored }} occurrence, but {{ made.local_label }} happens only once in {{ made.timezone }}, so that choice was not needed and was ignored.</p>{% endif %}
</div>
{% endif %}

<section aria-labelledby="new-heading">
<h2 id="new-heading">New schedule</h2>
{% if error %}
<div class="problem" role="alert" id="form-error" data-error-code="{{ error.code }}" tabindex="-1"{% if not focus_fold %} autofocus{% endif %}>
  <p><strong>Not scheduled.</strong> {{ error.text }}</p>
  {% if chosen_now %}<p data-now-chosen>Now in {{ form.timezone }}: {{ chosen_now }}.</p>{% endif %}
</div>
{% endif %}
{% if choices %}
<form method="post" action="/installations/{{ installation_id }}/schedules" class="schedule-form" novalidate>
  {{ session_fields(csrf_token, opened_for) }}
  {{ pin_fields(content) }}
  <fieldset{% if error and error.field == "transition" %} aria-describedby="form-error"{% endif %}>
    <legend>Change</legend>
    {% for c in choices %}
    <div class="choice">
      <input type="radio" name="transition" id="t-{{ loop.index }}" value="{{ c.value }}"{% if c.value == form.transition %} checked{% endif %}{% if c.disabled %} disabled{% endif %}>
      <label for="t-{{ loop.index }}">{{ c.label }}</label>
    </div>
    {% endfor %}
  </fieldset>
  <div class="field">
    <label for="local_time">Date and time</label>
    <p class="hint" id="local_time-hint">The time on the clock in the time zone below.</p>
    {% if now_label %}<p class="hint now" id="now-hint" data-now-zone="{{ now_zone }}">Now in {{ now_zone }}: {{ now_label }}</p>{% endif %}
    <input type="datetime-local" id="local_time" name="local_time" step="60" required value="{{ form.local_time }}" aria-describedby="local_time-hint{% if now_label %} now-hint{% endif %}{% if error and error.field == 'local_time' %} form-error{% endif %}"{% if error and error.field == "local_time" %} aria-invalid="true"{% endif %}>
  </div>
  <div class="field">
    <label for="timezone">Time zone</label>
    <p class="hint" id="timezone-hint">An IANA name such as Europe/Paris; type to see suggestions. The site's zone is {{ site_timezone }}.</p>
    <input type="text" id="timezone" name="timezone" list="zones" required autocomplete="off" spellcheck="false" value="{{ form.timezone }}" aria-describedby="timezone-hint{% if error and error.field == 'timezone' %} form-error{% endif %}"{% if error and error.field == "timezone" %} aria-invalid="true"{% endif %}>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
  <fieldset class="fold"{% if error and error.field == "fold" %} aria-describedby="form-error"{% endif %}>
    <legend>If this time happens twice</legend>
    <p class="hint">Only when clocks go back: the same wall time then happens twice.</p>
    <div class="choice"><input type="radio" name="fold" id="fold-none" value=""{% if not form.fold %} checked{% endif %}><label for="fold-none">Not needed</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-earlier" value="earlier"{% if form.fold == "earlier" %} checked{% endif %}{% if focus_fold %} autofocus{% endif %}><label for="fold-earlier">The earlier one{% if fold_choices %}: {{ fold_choices[0] }}{% else %} (before the clocks go back){% endif %}</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-later" value="later"{% if form.fold == "later" %} checked{% endif %}><label for="fold-later">The later one{% if fold_choices %}: {{ fold_choices[1] }}{% else %} (after the clocks go back){% endif %}</label></div>
  </fieldset>
  <button type="submit">Schedule</button>
</form>
{% else %}
<p>You may not publish or unpublish this content now, so there is nothing to schedule.</p>
{% endif %}
</section>

<section aria-labelledby="list-heading">
<h2 id="list-heading">Schedules for this content</h2>
{% if schedules and pager.last_page > 1 %}<p class="page-info" data-page="{{ pager.page_number }}">Showing {{ pager.first_shown }}–{{ pager.last_shown }} of {{ pager.total }}, page {{ pager.page_number }} of {{ pager.last_page }}.</p>{% endif %}
{% if not schedules and pager.page_number > 1 and pager.total %}
<p class="empty">There is no page {{ pager.page_number }}: <a href="{{ pager.last_href }}">go to page {{ pager.last_page }}</a>.</p>
{% else %}
{{ schedule_list(schedules, card_page, "Schedules for this content") }}
{% endif %}
{{ page_links(pager) }}
</section>
{% endblock %}
"""
