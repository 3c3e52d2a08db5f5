"""The content page: what Dee Wan reports about the content, the form, and its schedules.

The form does the time arithmetic for the editor without any script: the time
now in the form's zone, a suggested time, both instants of a wall time that
happens twice, the first minute after one the clocks skip, what a new schedule
would replace, and a receipt that says until when the plugin keeps trying. The
schedules in view are the live ones and the latest few ended ones; the rest is a
folded history.
"""

CONTENT = """{% extends "base.html" %}
{% from "cards.html" import schedule_list, session_fields %}
{% from "pin_fields.html" import pin_fields %}
{% from "pager.html" import page_info, page_links %}
{% macro retry_form(r) %}
<form method="post" action="/installations/{{ installation_id }}/schedules" class="retry">
  {{ session_fields(csrf_token, opened_for, tab) }}
  {{ pin_fields(pins) }}
  <input type="hidden" name="transition" value="{{ form.transition }}">
  <input type="hidden" name="local_time" value="{{ r.value if r.field == 'local_time' else form.local_time }}">
  <input type="hidden" name="timezone" value="{{ r.value if r.field == 'timezone' else form.timezone }}">
  <input type="hidden" name="fold" value="{{ r.value if r.field == 'fold' else form.fold }}">
  <button type="submit" data-retry-{{ r.field|replace('_', '-') }}="{{ r.value }}">{% if r.field == "local_time" %}Schedule it at {{ r.label }} instead{% elif r.field == "fold" %}Schedule it at {{ r.label }}{% else %}Schedule it in {{ r.label }}{% endif %}</button>
</form>
{% endmacro %}
{% block title %}{% if error %}Not scheduled: {% endif %}{{ title }}{% endblock %}
{% block main %}
{% if content %}
<h1>Schedule “{{ content.title }}”</h1>
<dl class="facts">
  <dt>Model</dt><dd>{{ content.model }}</dd>
  <dt>Locale</dt><dd>{{ content.locale }}</dd>
  <dt>Current version</dt><dd><code>{{ content.current_version_id }}</code></dd>
  <dt>Published version</dt><dd>{% if content.published_version_id %}<code>{{ content.published_version_id }}</code>{% else %}none{% endif %}</dd>
  {% if content.primary_id != content.id %}<dt>Translation of</dt><dd data-primary-id="{{ content.primary_id }}">{% if primary_title is not none %}“{{ primary_title }}”{% else %}the group's main item (Dee Wan did not give its title){% endif %}: schedules apply to the whole translation group</dd>{% endif %}
</dl>
{% else %}
<h1>Schedules of content <code>{{ content_id }}</code></h1>
{% endif %}
{% include "news.html" %}
{% if proposals_href %}<p class="notice" data-proposals-waiting><a href="{{ proposals_href }}">An agent proposes a change to this content</a>: confirm or decline it on the Agents page.</p>{% endif %}
{% if unread %}
<div class="warning" role="status" data-unread="{{ unread.code }}">
  <p>{{ unread.text }}</p>
  <p class="inline"><a class="button secondary" href="{{ unread.retry_href }}">Try again</a> <a href="{{ unread.dee_wan_href }}">Back to Dee Wan</a></p>
  <p class="support">For support: code {{ unread.code }}.</p>
</div>
{% endif %}

{% if flash %}<div class="notice" role="status" data-cancelled="{{ cancelled_id }}"><p>{{ flash }}</p></div>{% endif %}
{% if stale %}<div class="warning" role="status" data-stale-count="{{ stale|length }}"><p>{% if stale|length == 1 %}One waiting schedule pins{% else %}{{ stale|length }} waiting schedules pin{% endif %} what Dee Wan no longer reports, so it would be refused: <a href="#schedule-{{ stale[0].id }}">see {% if stale|length == 1 %}it{% else %}them{% endif %} below</a>.</p></div>{% endif %}
{% if notice %}
{% set made = notice.card %}
<div class="notice" role="status" data-confirmation="{{ made.id }}">
  <p>Scheduled: {{ made.kind_label|lower }} the pinned version <code>{{ made.version_id }}</code> at <time datetime="{{ made.when_iso }}">{{ made.when_label }}</time>.</p>
  {% if notice.replaced %}<p data-replaced="{{ notice.replaced_id }}">It replaces the schedule of version <code>{{ notice.replaced_version }}</code> for {{ notice.replaced }}, which will not be sent; it is kept in the history below.</p>{% endif %}
  {% if made.release %}<p data-release-id="{{ made.release.id }}" data-release-status="{{ made.release.status }}">It is an item of the release “{{ made.release.name }}”, sent at its time after the items before it.</p>{% endif %}
  <p data-deadline="{{ made.deadline_iso }}">If Dee Wan cannot be reached, nothing is sent after <time datetime="{{ made.deadline_iso }}">{{ made.deadline_label }}</time>.</p>
  {% if notice.conflict %}<p data-conflict="{{ notice.conflict.role }}" data-conflict-with="{{ notice.conflict.other_id }}"><strong>Collision:</strong> {{ notice.conflict.text }}</p>{% endif %}
  {% if notice.sent_now %}<p data-sent-now="{{ notice.sent_now }}">Sent now instead of at its time: {% if notice.sent_now == "clock" %}the installation's clock was told, so it leaves within seconds{% else %}the runner's next tick sends it, within a minute{% endif %}.</p>{% endif %}
  {% if notice.years_ahead %}<p data-years-ahead="{{ notice.years_ahead }}"><strong>Note:</strong> that is about {{ notice.years_ahead }} from now. If you meant an earlier year, schedule it again with the right date: the new schedule replaces this one.</p>{% endif %}
  {% if fold_ignored %}<p data-fold-ignored="{{ fold_ignored }}">You chose the {{ fold_ignored }} occurrence, but {{ made.when_short }} happens only once, so that choice was not needed and was ignored.</p>{% endif %}
</div>
{% endif %}

<section aria-labelledby="new-heading">
<h2 id="new-heading">New schedule</h2>
{% if error %}
<div class="problem" role="alert" id="form-error" data-error-code="{{ error.code }}" tabindex="-1"{% if not focus_fold %} autofocus{% endif %}>
  <p><strong>Not scheduled.</strong> {{ error.text }}</p>
  {% if error.retries %}<div class="retries">{% for r in error.retries %}{{ retry_form(r) }}{% endfor %}</div>{% endif %}
  {% if error.retry_of and error.code == "content_changed" %}<div class="retries">
    <form method="post" action="/installations/{{ installation_id }}/schedules/{{ error.retry_of }}/retry" class="retry">
      {{ session_fields(csrf_token, opened_for, tab) }}
      {{ pin_fields(pins) }}
      <button type="submit" data-retry-of="{{ error.retry_of }}">Try again with what Dee Wan reports now</button>
    </form>
  </div>{% endif %}
  <p class="support">For support: code {{ error.code }}.</p>
</div>
{% endif %}
{% if choices %}
<form method="post" action="/installations/{{ installation_id }}/schedules" class="schedule-form" novalidate>
  {{ session_fields(csrf_token, opened_for, tab) }}
  {{ pin_fields(pins) }}
  <fieldset{% if error and error.field == "transition" %} aria-describedby="form-error"{% endif %}>
    <legend>Change</legend>
    {% for c in choices %}
    <div class="choice">
      <input type="radio" name="transition" id="t-{{ loop.index }}" value="{{ c.value }}"{% if c.value == form.transition %} checked{% endif %}{% if c.disabled %} disabled{% endif %}{% set described = [c.replaces and "t-%d-replaces" % loop.index, c.collides and not c.disabled and "t-%d-collides" % loop.index]|select|join(" ") %}{% if described %} aria-describedby="{{ described }}"{% endif %}>
      <label for="t-{{ loop.index }}">{{ c.label }}</label>
    </div>
    {% if c.replaces %}<p class="hint replaces" id="t-{{ loop.index }}-replaces" data-replaces="{{ c.replaces_id }}" data-for="{{ c.value }}">{{ c.replaces }}</p>{% endif %}
    {% if c.collides and not c.disabled %}<p class="hint collides" id="t-{{ loop.index }}-collides" data-collides-with="{{ c.collides_id }}" data-for="{{ c.value }}"><strong>Collision:</strong> {{ c.collides }}</p>{% endif %}
    {% endfor %}
  </fieldset>
  <div class="field">
    <label for="local_time">Date and time</label>
    <p class="hint" id="local_time-hint">The time on the clock in the time zone below.{% if time_entered %} <span data-time-entered>{{ time_entered }}</span>{% endif %}</p>
    {% if now_label %}<p class="hint now" id="now-hint" data-now-zone="{{ now_zone }}">Now in {{ now_zone }}: {{ now_label }}</p>{% endif %}
    <input type="datetime-local" id="local_time" name="local_time" step="60" required value="{{ form.local_time }}" aria-describedby="local_time-hint{% if now_label %} now-hint{% endif %}{% if error and error.field == 'local_time' %} form-error{% endif %}"{% if error and error.field == "local_time" %} aria-invalid="true"{% endif %}>
  </div>
  <div class="field">
    <label for="timezone">Time zone</label>
    <p class="hint" id="timezone-hint">An IANA name such as Europe/Paris, in any case; type to see suggestions.{% if site_timezone %} The site's zone is {{ site_timezone }}.{% endif %}</p>
    <input type="text" id="timezone" name="timezone" list="zones" required autocomplete="off" spellcheck="false" value="{{ form.timezone }}" aria-describedby="timezone-hint{% if error and error.field == 'timezone' %} form-error{% endif %}"{% if error and error.field == "timezone" %} aria-invalid="true"{% endif %}>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
  {% if fold_choices %}
  <fieldset class="fold"{% if error and error.field == "fold" %} aria-describedby="form-error"{% endif %}>
    <legend>This time happens twice</legend>
    <p class="hint">The clocks go back then, so the same wall time happens twice in {{ form.timezone }}: choose which.</p>
    <div class="choice"><input type="radio" name="fold" id="fold-earlier" value="earlier"{% if form.fold == "earlier" %} checked{% endif %}{% if focus_fold %} autofocus{% endif %}><label for="fold-earlier">The earlier one: {{ fold_choices[0] }}</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-later" value="later"{% if form.fold == "later" %} checked{% endif %}><label for="fold-later">The later one: {{ fold_choices[1] }}</label></div>
  </fieldset>
  {% endif %}
  <div class="field release-choice">
    <label for="release">Release</label>
    <p class="hint" id="release-hint">A release sends several changes one at a time, in order, at its own time: a change added to a waiting release takes its time, not the one above.</p>
    <select id="release" name="release" aria-describedby="release-hint{% if error and error.field == 'release' %} form-error{% endif %}"{% if error and error.field == "release" %} aria-invalid="true"{% endif %}>
      <option value=""{% if not form.release %} selected{% endif %}>On its own</option>
      {% for r in releases %}<option value="{{ r.value }}"{% if form.release == r.value %} selected{% endif %}>Add it to the release {{ r.label }}</option>
      {% endfor %}<option value="new"{% if form.release == "new" %} selected{% endif %}>A new release at the time above, named below</option>
    </select>
  </div>
  <div class="field">
    <label for="release_name">Name of a new release</label>
    <input type="text" id="release_name" name="release_name" maxlength="100" value="{{ form.release_name }}"{% if error and error.field == "release_name" %} aria-invalid="true" aria-describedby="form-error"{% endif %}>
  </div>
  <button type="submit">Schedule</button>
</form>
{% elif unread %}
<p>Nothing can be scheduled until Dee Wan answers: it says which versions there are and which changes you may make.</p>
{% else %}
<p>You may not publish or unpublish this content now, so there is nothing to schedule.</p>
{% endif %}
</section>

<section aria-labelledby="list-heading">
<h2 id="list-heading">Schedules for this content</h2>
{% if page_note %}<div class="warning" role="status" data-page-corrected="{{ pager.page_number }}"><p>{{ page_note }}</p></div>{% endif %}
{{ page_info(pager) }}
{{ page_links(pager, "top") }}
{% if pager.page_number == 1 %}
{{ schedule_list(current, card_page, "Schedules for this content", empty="No schedules yet." if not history.count else "Nothing is waiting and nothing has ended lately: see the history below.") }}
{% else %}
<p>The waiting schedules and the latest ended ones are on <a href="{{ pager.first_href }}">the first page</a>.</p>
{% endif %}
{% if history.count %}
<details class="history" id="history" data-history-count="{{ history.count }}" data-replaced-count="{{ history.replaced }}"{% if history.open %} open{% endif %}>
  <summary>{{ history.summary }}</summary>
  {{ schedule_list(history.cards, card_page, "Earlier schedules", empty="") }}
</details>
{% endif %}
{{ page_links(pager, "bottom") }}
</section>
{% endblock %}
"""
