"""Page templates, kept in Python so they ship inside the Worker bundle with the code.

One jinja2 Environment, autoescaping everything. No script anywhere: every
page works with forms and links alone.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2

BASE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}{{ title }}{% endblock %} · Scheduling</title>
<link rel="stylesheet" href="/static/app.css">
</head>
<body>
<a class="skip" href="#main">Skip to main content</a>
<header class="top">
  <p class="brand">Scheduling <span>for Dee Wan</span></p>
  {% if person_name %}<p class="who">Opened from Dee Wan by {{ person_name }}</p>{% endif %}
</header>
<main id="main" tabindex="-1">
{% block main %}{% endblock %}
</main>
</body>
</html>
"""

ERROR = """{% extends "base.html" %}
{% block main %}
<h1>{{ title }}</h1>
<div class="problem" role="alert" data-error-code="{{ code }}">
  <p>{{ message }}</p>
</div>
{% if relaunch %}<p>Open Scheduling again from Dee Wan: use <strong>Schedule</strong> on a content item, or <strong>Scheduling</strong> in the plugin menu.</p>{% endif %}
{% endblock %}
"""

MACROS = """{% macro schedule_list(schedules, csrf_token, opened_for, installation_id, show_content, label) %}
{% if schedules %}
<ul class="schedules" aria-label="{{ label }}">
{% for s in schedules %}
  <li class="schedule" id="schedule-{{ s.id }}" data-schedule-id="{{ s.id }}" data-status="{{ s.status }}"{% if s.result_code %} data-result-code="{{ s.result_code }}"{% endif %}>
    <h3>{{ s.kind_label }} version <code>{{ s.version_id }}</code>{% if show_content %} of content <code>{{ s.content_id }}</code>{% endif %}</h3>
    <dl>
      <dt>When</dt>
      <dd>{{ s.local_label }} <span class="tz">({{ s.timezone }})</span> · <span class="utc">{{ s.utc_label }}</span></dd>
      <dt>Status</dt>
      <dd><span class="status status-{{ s.status }}">{{ s.status_label }}</span>{% if s.status == "retrying" and s.next_label %}, next try {{ s.next_label }}{% endif %}</dd>
      {% if s.result_code %}
      <dt>Result</dt>
      <dd><code>{{ s.result_code }}</code>: {{ s.result_text }}</dd>
      {% endif %}
      <dt>Requested by</dt>
      <dd>{{ s.requested_by_name }} (schedule no. {{ s.revision }} of this change for this content)</dd>
    </dl>
    {% if s.attempts %}
    <details>
      <summary>Attempts ({{ s.attempts|length }})</summary>
      <ol class="attempts">
      {% for a in s.attempts %}
        <li>Started {{ a.started_label }}:
          {% if a.finished_at is none %}<strong>outcome unknown</strong> (no answer was recorded){% else %}{% if a.http_status %}HTTP {{ a.http_status }}, {% endif %}<code>{{ a.code }}</code>{% endif %}
        </li>
      {% endfor %}
      </ol>
    </details>
    {% endif %}
    {% if s.status in ("pending", "retrying") %}
    <form method="post" action="/installations/{{ installation_id }}/schedules/{{ s.id }}/cancel" class="cancel">
      <input type="hidden" name="csrf_token" value="{{ csrf_token }}">
      <input type="hidden" name="opened_for" value="{{ opened_for }}">
      <button type="submit">Cancel<span class="visually-hidden"> {{ s.kind_label|lower }} of {{ s.version_id }} at {{ s.local_label }}</span></button>
    </form>
    {% endif %}
  </li>
{% endfor %}
</ul>
{% else %}
<p>No schedules yet.</p>
{% endif %}
{% endmacro %}
"""

CONTENT = """{% extends "base.html" %}
{% from "macros.html" import schedule_list %}
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
{% if notice %}
<div class="notice" role="status" data-confirmation="{{ notice.id }}">
  <p>Scheduled: {{ notice.kind_label|lower }} version <code>{{ notice.version_id }}</code> at {{ notice.local_label }} ({{ notice.timezone }}), which is {{ notice.utc_label }}.{% if notice.superseded %} It replaces the earlier schedule.{% endif %}</p>
</div>
{% endif %}

<section aria-labelledby="new-heading">
<h2 id="new-heading">New schedule</h2>
{% if error %}
<div class="problem" role="alert" id="form-error" data-error-code="{{ error.code }}" tabindex="-1" autofocus>
  <p><strong>Not scheduled.</strong> {{ error.text }}</p>
</div>
{% endif %}
{% if choices %}
<form method="post" action="/installations/{{ installation_id }}/schedules" class="schedule-form" novalidate>
  <input type="hidden" name="csrf_token" value="{{ csrf_token }}">
  <input type="hidden" name="opened_for" value="{{ opened_for }}">
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
    <input type="datetime-local" id="local_time" name="local_time" step="60" required value="{{ form.local_time }}" aria-describedby="local_time-hint{% if error and error.field == 'local_time' %} form-error{% endif %}"{% if error and error.field == "local_time" %} aria-invalid="true"{% endif %}>
  </div>
  <div class="field">
    <label for="timezone">Time zone</label>
    <p class="hint" id="timezone-hint">An IANA name such as Europe/Paris. The site's zone is {{ site_timezone }}.</p>
    <input type="text" id="timezone" name="timezone" list="zones" required autocomplete="off" spellcheck="false" value="{{ form.timezone }}" aria-describedby="timezone-hint{% if error and error.field == 'timezone' %} form-error{% endif %}"{% if error and error.field == "timezone" %} aria-invalid="true"{% endif %}>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
  <fieldset{% if error and error.field == "fold" %} aria-describedby="form-error"{% endif %}>
    <legend>If this time happens twice</legend>
    <p class="hint">Only when clocks go back: the same wall time then happens twice.</p>
    <div class="choice"><input type="radio" name="fold" id="fold-none" value=""{% if not form.fold %} checked{% endif %}><label for="fold-none">Not needed</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-earlier" value="earlier"{% if form.fold == "earlier" %} checked{% endif %}><label for="fold-earlier">The earlier one (before the clocks go back)</label></div>
    <div class="choice"><input type="radio" name="fold" id="fold-later" value="later"{% if form.fold == "later" %} checked{% endif %}><label for="fold-later">The later one (after the clocks go back)</label></div>
  </fieldset>
  <button type="submit">Schedule</button>
</form>
{% else %}
<p>You may not publish or unpublish this content now, so there is nothing to schedule.</p>
{% endif %}
</section>

<section aria-labelledby="list-heading">
<h2 id="list-heading">Schedules for this content</h2>
{{ schedule_list(schedules, csrf_token, opened_for, installation_id, false, "Schedules for this content") }}
</section>
{% endblock %}
"""

MANAGE = """{% extends "base.html" %}
{% from "macros.html" import schedule_list %}
{% block main %}
<h1>All schedules</h1>
<p>Every schedule of this installation, newest first. To create one, use <strong>Schedule</strong> on a content item in Dee Wan.</p>
{% if flash %}<div class="notice" role="status"><p>{{ flash }}</p></div>{% endif %}
{{ schedule_list(schedules, csrf_token, opened_for, installation_id, true, "All schedules") }}
{% endblock %}
"""

STYLES = """
:root { color-scheme: light; --ink: #1b1b1f; --muted: #4a4a55; --line: #c9c9d2; --accent: #0b57d0;
        --bad: #a50e0e; --good: #146c2e; --bg: #ffffff; --soft: #f3f4f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--bg); }
.skip { position: absolute; left: -999px; top: 0; padding: .5rem 1rem; background: var(--ink); color: #fff; }
.skip:focus { left: 1rem; }
.top { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; padding: .75rem 1.5rem;
       border-bottom: 1px solid var(--line); background: var(--soft); }
.top p { margin: 0; }
.brand { font-weight: 700; } .brand span { font-weight: 400; color: var(--muted); }
main { max-width: 52rem; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin-top: 0; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; margin: 0 0 .5rem; }
dl.facts, .schedule dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0 0 .75rem; }
dt { font-weight: 600; } dd { margin: 0; }
code { font-family: ui-monospace, monospace; font-size: .95em; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 1rem; padding: .75rem 1rem; }
legend { font-weight: 600; padding: 0 .25rem; }
.field { margin: 0 0 1rem; } .field label { display: block; font-weight: 600; }
.hint { margin: .1rem 0 .35rem; color: var(--muted); font-size: .92rem; }
input[type=text], input[type=datetime-local] { font: inherit; padding: .4rem .5rem; border: 1px solid #6e6e78;
       border-radius: 4px; min-width: 16rem; }
input[aria-invalid=true] { border: 2px solid var(--bad); }
.choice { display: flex; gap: .5rem; align-items: center; margin: .2rem 0; }
button { font: inherit; padding: .45rem 1rem; border-radius: 4px; border: 1px solid var(--accent);
         background: var(--accent); color: #fff; cursor: pointer; }
form.cancel button { background: #fff; color: var(--bad); border-color: var(--bad); }
:focus-visible { outline: 3px solid #e37400; outline-offset: 2px; }
/* Text-entry fields keep the ring while focus is on a part of them, e.g. the date picker button. */
input[type=text]:focus, input[type=datetime-local]:focus-within { outline: 3px solid #e37400; outline-offset: 2px; }
.problem { border-left: 4px solid var(--bad); background: #fdecec; padding: .5rem 1rem; margin: 0 0 1rem; }
.notice { border-left: 4px solid var(--good); background: #e9f6ec; padding: .5rem 1rem; margin: 1rem 0; }
.problem p, .notice p { margin: .25rem 0; }
ul.schedules { list-style: none; padding: 0; }
.schedule { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; margin: 0 0 .75rem; }
.status { font-weight: 600; }
.status-completed { color: var(--good); } .status-refused { color: var(--bad); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
"""

_SOURCES = {
    "base.html": BASE,
    "error.html": ERROR,
    "macros.html": MACROS,
    "content.html": CONTENT,
    "manage.html": MANAGE,
}


@functools.cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader(_SOURCES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
