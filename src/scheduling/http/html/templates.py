"""The templates every page shares, as sources: the layout (`base.html`), the page a refusal
is shown on (`error.html`), and a schedule as a card, its facts as `data-*` attributes. The
pages render them compiled (`compiled_templates.py`).
"""

from __future__ import annotations

# -- the layout and the error page -----------------------------------------------------------------

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
  {% if person_name %}<p class="who">Opened from Dee Wan by {{ person_name }}{% if dee_wan_href is defined and dee_wan_href %} · <a href="{{ dee_wan_href }}" data-dee-wan>Back to Dee Wan</a>{% endif %}</p>{% endif %}
  {% if rooms is defined and rooms %}<nav class="rooms" aria-label="Scheduling pages"><ul>{% for r in rooms %}<li><a href="{{ r.href }}" data-room="{{ r.name }}"{% if r.current %} aria-current="page"{% endif %}>{{ r.label }}</a></li>{% endfor %}</ul></nav>{% endif %}
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
  <p class="support">For support: code {{ code }}.</p>
</div>
{% if relaunch %}<p>Open Scheduling again from Dee Wan: use <strong>Schedule</strong> on a content item, or <strong>Scheduling</strong> in the plugin menu.</p>{% endif %}
{% if steps.after_launch %}<p data-after-launch>Came here from a chat message or a bookmark? Open Scheduling from Dee Wan in this browser first (you sign in there, not here); then <strong>Try again</strong> shows this page.</p>{% endif %}
{% if resend %}
<form method="post" action="{{ resend_to }}" data-resend>
  {% for name, value in resend %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
  <button type="submit">Send it again</button>
</form>
{% endif %}
{% if steps.retry_href or steps.back_href or steps.dee_wan_href or steps.about_href %}
<nav class="next-steps" aria-label="What you can do now">
  <p class="inline">
  {% if steps.retry_href %}<a class="button secondary" href="{{ steps.retry_href }}" data-next="retry">Try again</a>{% endif %}
  {% if steps.back_href %}<a class="button secondary" href="{{ steps.back_href }}" data-next="back">Back to the schedules</a>{% endif %}
  {% if steps.dee_wan_href %}<a href="{{ steps.dee_wan_href }}" data-next="dee-wan">Back to Dee Wan</a>{% endif %}
  {% if steps.about_href %}<a href="{{ steps.about_href }}" data-next="about">What Scheduling is, and how to open it</a>{% endif %}
  </p>
</nav>
{% endif %}
{% endblock %}
"""

NEWS = """{% if news %}
<section class="notice news" aria-labelledby="news-heading" data-news-since="{{ news.since_iso }}">
  <h2 id="news-heading">Since your last visit ({{ news.since }})</h2>
  <ul>
  {% for n in news.items %}
    <li data-news-of="{{ n.schedule_id }}" data-news-outcome="{{ n.outcome }}">{{ n.what }}, due {{ n.when }}: <strong>{{ n.label }}</strong>.
    {% if n.href %}<a href="{{ n.href }}">{{ n.way }}<span class="visually-hidden"> ({{ n.what }})</span></a>{% else %}Open it from Dee Wan (<strong>Schedule</strong> on the content) to see its card.{% endif %}</li>
  {% endfor %}
  </ul>
  {% if news.more %}<p>And {{ news.more }} more.</p>{% endif %}
</section>
{% endif %}
"""


# -- the schedule cards ----------------------------------------------------------------------------

PAGER = """{% macro page_info(p) %}
{% if p.last_page > 1 and p.total %}<p class="page-info" data-page="{{ p.page_number }}">Showing {{ p.first_shown }}–{{ p.last_shown }} of {{ p.total }}, page {{ p.page_number }} of {{ p.last_page }}.</p>{% endif %}
{% endmacro %}

{% macro page_links(p, where="bottom") %}
{% if p.prev_href or p.next_href %}
<nav class="pager pager-{{ where }}" aria-label="Pages ({{ where }})">
  {% if p.prev_href %}<a rel="prev" href="{{ p.prev_href }}">Previous page<span class="visually-hidden"> ({{ p.page_number - 1 }} of {{ p.last_page }})</span></a>{% endif %}
  {% if p.next_href %}<a rel="next" href="{{ p.next_href }}">Next page<span class="visually-hidden"> ({{ p.page_number + 1 }} of {{ p.last_page }})</span></a>{% endif %}
</nav>
{% endif %}
{% endmacro %}
"""

# `form_fields(page, pins)`: the session's fields (`page`: a `CardPage`) and, on a content
# page, the versions it shows (`schedules.ShownVersions`), which its forms carry.
CARDS = """{% macro session_fields(csrf_token, opened_for, tab) %}
  <input type="hidden" name="csrf_token" value="{{ csrf_token }}">
  <input type="hidden" name="opened_for" value="{{ opened_for }}">
  {% if tab %}<input type="hidden" name="tab" value="{{ tab }}">{% endif %}
{% endmacro %}

{% macro form_fields(page, pins=none) %}
  {{ session_fields(page.csrf_token, page.opened_for, page.tab) }}
  {% if pins %}
  <input type="hidden" name="version_id" value="{{ pins.current }}">
  <input type="hidden" name="published_version_id" value="{{ pins.published or '' }}">
  {% endif %}
{% endmacro %}

{% macro schedule_card(s, page, level=3) %}
  <li class="schedule{% if s.stale %} is-stale{% endif %}" id="schedule-{{ s.id }}" data-schedule-id="{{ s.id }}" data-status="{{ s.status }}"{% if s.result_code %} data-result-code="{{ s.result_code }}"{% endif %}{% if s.ended_by %} data-ended-by="{{ s.ended_by }}"{% endif %}{% if s.settled %} data-settled="true"{% endif %}{% if s.resolved_by %} data-resolved-by="{{ s.resolved_by }}"{% endif %}{% if s.stale %} data-pin-stale="true"{% endif %}{% if s.late_ms %} data-late-ms="{{ s.late_ms }}"{% endif %}{% if s.conflict %} data-conflict="{{ s.conflict.role }}" data-conflict-with="{{ s.conflict.other_id }}"{% endif %}{% if s.needs_repin %} data-needs-repin="true"{% endif %} data-content-id="{{ s.content_id }}">
    <div class="card-head">
    <h{{ level }}>{{ s.kind_label }} version <code>{{ s.version_id }}</code>{% if page.show_content %} of {% if s.title is not none %}“{{ s.title }}”{% else %}content <code>{{ s.content_id }}</code>{% endif %}{% endif %}</h{{ level }}>
    {% if s.cancellable %}
    <a class="button cancel" href="{{ page.cancel_href(s.id) }}">Cancel…<span class="visually-hidden"> the schedule to {{ s.change }} at {{ s.when_short }}</span></a>
    {% endif %}
    </div>
    <dl>
      <dt>When</dt>
      <dd>{% if s.viewer_label %}<span class="viewer"><time datetime="{{ s.when_iso }}">{{ s.viewer_label }}</time></span>{% if s.timezone != "UTC" %}; entered as {{ s.when_short }}{% endif %}{% else %}<time datetime="{{ s.when_iso }}">{{ s.when_label }}</time>{% endif %}</dd>
      <dt>Status</dt>
      <dd><span class="status status-{{ s.status }}{% if s.late_ms %} is-late{% endif %}">{{ s.status_label }}</span>{% if s.cancelled_label %} {{ s.cancelled_label }}{% endif %}{% if s.next_label %}, next try {{ s.next_label }}{% endif %}{% if s.next_note %}. {{ s.next_note }}{% endif %}{% if s.dismissed_label %}. <span data-dismissed>Dismissed {{ s.dismissed_label }}</span>{% endif %}{% if s.resolved_by %}. A later schedule of the same change was done{% endif %}</dd>
      {% if s.result_code %}
      <dt>Result</dt>
      <dd>{{ s.result_text }}</dd>
      {% endif %}
      <dt>Requested by</dt>
      <dd>{{ s.requested_by_name }}</dd>
    </dl>
    {% if s.release %}<p class="release-of" data-release-id="{{ s.release.id }}" data-release-status="{{ s.release.status }}">An item of the release <a href="/installations/{{ page.installation_id }}/releases/{{ s.release.id }}{% if page.tab %}?tab={{ page.tab }}{% endif %}">“{{ s.release.name }}”</a>.</p>{% endif %}
    {% if page.context_kind == "content" and page.pins and s.cancellable and s.status in ("pending", "retrying") and not s.release_id %}
    <details class="move">
      <summary>Change its time, or send it now<span class="visually-hidden"> ({{ s.change }} at {{ s.when_short }})</span></summary>
      <form method="post" action="/installations/{{ page.installation_id }}/schedules/{{ s.id }}/move" class="move-form">
        {{ form_fields(page, page.pins) }}
        <label for="move-{{ s.id }}-time">New date and time</label>
        <input type="datetime-local" id="move-{{ s.id }}-time" name="local_time" step="60" required value="{{ s.local_time }}">
        <label for="move-{{ s.id }}-zone">Time zone</label>
        <input type="text" id="move-{{ s.id }}-zone" name="timezone" required autocomplete="off" spellcheck="false" value="{{ s.timezone }}">
        <input type="hidden" name="fold" value="{{ s.fold or '' }}">
        <button type="submit" class="secondary">Move it</button>
      </form>
      <form method="post" action="/installations/{{ page.installation_id }}/schedules/{{ s.id }}/send-now" class="send-now">
        {{ form_fields(page, page.pins) }}
        <button type="submit" class="secondary">Send it now</button>
      </form>
      <p class="hint">Either makes a new schedule of the same change, pinned to the version this page shows, and this one is not sent.</p>
    </details>
    {% endif %}
    {% if s.conflict %}
    <div class="warning conflict"><p><strong>Collision.</strong> {{ s.conflict.text }}</p></div>
    {% endif %}
    {% if s.stale or s.needs_repin %}
    <div class="stale">
      <p><strong>Out of date.</strong> {{ s.needs_repin or s.stale }}</p>
      {% if s.repin_version %}
      <form method="post" action="/installations/{{ page.installation_id }}/schedules" class="repin">
        {{ form_fields(page, page.pins) }}
        <input type="hidden" name="repin_of" value="{{ s.id }}">
        <button type="submit">Pin {{ s.repin_version }} instead, same time<span class="visually-hidden"> ({{ s.kind_label|lower }} at {{ s.when_short }})</span></button>
      </form>
      {% elif page.context_kind == "content" and s.stale %}
      <p>You may not make this change now, so it cannot be pinned again from here.</p>
      {% elif page.context_kind != "content" %}
      <p>To pin it again, use <strong>Schedule</strong> on this content in Dee Wan.</p>
      {% endif %}
    </div>
    {% endif %}
    {% if s.status == "refused" and not s.resolved_by %}
    <div class="next-step">
      {% if s.retry %}
      {% if s.retry.replaces %}<p class="hint replaces" id="retry-{{ s.id }}-replaces">{{ s.retry.replaces }}</p>{% endif %}
      <form method="post" action="/installations/{{ page.installation_id }}/schedules/{{ s.id }}/retry" class="try-again">
        {{ form_fields(page, page.pins) }}
        <button type="submit" data-retry-of="{{ s.id }}"{% if s.retry.replaces %} aria-describedby="retry-{{ s.id }}-replaces"{% endif %}>Try again{% if s.retry.version %} with {{ s.retry.version }}{% endif %}<span class="visually-hidden"> ({{ s.change }}, which was not done)</span></button>
      </form>
      <p class="hint">A new schedule of the same change, sent at the next minute{% if s.retry.version %}, pinned to {{ s.retry.version }}: Dee Wan reports it now instead of {{ s.version_id }}{% endif %}.</p>
      {% elif page.context_kind == "content" and page.unread %}
      <p data-unread-step>Dee Wan is not answering, so it cannot be tried again until it does: <strong>Try again</strong> at the top of the page shows it again.</p>
      {% elif page.context_kind == "content" %}
      <p>You may not make this change now, so it cannot be tried again from here.</p>
      {% elif not s.settled %}
      <p>To try again, open {% if s.title is not none %}“{{ s.title }}”{% else %}this content{% endif %} in Dee Wan and press <strong>Schedule</strong>.</p>
      {% endif %}
      {% if s.dismissable %}
      <form method="post" action="/installations/{{ page.installation_id }}/schedules/{{ s.id }}/dismiss" class="dismiss">
        {{ form_fields(page) }}
        {% for name, value in page.back %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
        <button type="submit" class="secondary">Dismiss<span class="visually-hidden"> the schedule to {{ s.change }} at {{ s.when_short }}</span></button>
      </form>
      <p class="hint">Dismiss takes it out of Needs attention, once someone has seen to it; it stays under Finished.</p>
      {% endif %}
    </div>
    {% endif %}
    {% if s.attempts %}
    <details>
      <summary>Attempts ({{ s.attempts|length }})</summary>
      <ol class="attempts">
      {% for a in s.attempts %}
        <li>Started {{ a.started_label }}:
          {% if a.finished_at is none %}<strong>outcome unknown</strong> (no answer was recorded){% else %}{{ a.text }}{% if a.support %} <span class="support">({{ a.support }})</span>{% endif %}{% endif %}
        </li>
      {% endfor %}
      </ol>
    </details>
    {% endif %}
    <p class="support">For support: {{ s.support }}.</p>
  </li>
{% endmacro %}

{% macro schedule_list(schedules, page, label, level=3, empty="No schedules yet.") %}
{% if schedules %}
<ul class="schedules" aria-label="{{ label }}">
{% for s in schedules %}{{ schedule_card(s, page, level) }}{% endfor %}
</ul>
{% elif empty %}
<p>{{ empty }}</p>
{% endif %}
{% endmacro %}
"""
