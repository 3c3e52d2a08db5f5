"""The layout every page extends (`base.html`), the page a refusal is shown on
(`error.html`), and what the first page of a launch says happened since the last one
(`news.html`: `pages/since_last_visit.py`). Sources only: the pages render them compiled (`compiled_templates.py`)."""

from __future__ import annotations

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
