"""The calendar: the days of a week (or from today on), each a heading and a list of its
changes in time order, which the stylesheet lays out as a week's columns on a wide screen;
the zone, other weeks, and the person's calendar feed."""

CALENDAR = """{% extends "base.html" %}
{% from "cards.html" import session_fields %}
{% block main %}
<h1>Calendar</h1>
<p>What is waiting to be published or unpublished across this installation's contents, by day. {{ span }}, times in {{ zone }}.</p>
{% if flash %}<div class="notice" role="status" data-done><p>{{ flash }}</p></div>{% endif %}
<form method="get" action="/installations/{{ installation_id }}/calendar" class="zone-form">
  {% if tab %}<input type="hidden" name="tab" value="{{ tab }}">{% endif %}
  {% if view == "list" %}<input type="hidden" name="view" value="list">{% endif %}
  <div class="field">
    <label for="calendar-zone">Days and times in</label>
    <div class="inline">
      <input type="text" id="calendar-zone" name="zone" list="zones" autocomplete="off" spellcheck="false" value="{{ zone }}"{% if zone_problem %} aria-invalid="true" aria-describedby="zone-problem"{% endif %}>
      <button type="submit">Show</button>
    </div>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
</form>
{% if zone_problem %}<div class="problem" role="alert" id="zone-problem" data-error-code="unknown_timezone"><p>{{ zone_problem }}</p></div>{% endif %}
{% if titles_note %}<div class="warning" role="status" data-titles-missing><p>{{ titles_note }}</p></div>{% endif %}
<nav class="pager" aria-label="Other weeks and views">{% for what, label, href in links %}<a href="{{ href }}" data-calendar-link="{{ what }}">{{ label }}</a>{% endfor %}</nav>
<ol class="calendar calendar-{{ view }}" data-calendar-view="{{ view }}" data-zone="{{ zone }}">
{% for day in days %}
  <li class="calendar-day{% if day.today %} is-today{% endif %}" data-day="{{ day.key }}"{% if day.today %} aria-current="date"{% endif %}>
    <h2 id="day-{{ day.key }}">{{ day.label }}{% if day.today %} <span class="today">(today)</span>{% endif %}</h2>
    {% if day.changes %}
    <ul aria-labelledby="day-{{ day.key }}">
    {% for c in day.changes %}
      <li class="calendar-change{% if c.flag %} is-flagged{% endif %}" data-schedule-id="{{ c.schedule_id }}" data-status="{{ c.status }}"{% if c.flag %} data-flagged="true"{% endif %}>
        <time datetime="{{ c.when_iso }}">{{ c.time_label }}</time>
        {% if c.href %}<a href="{{ c.href }}">{{ c.what }}</a>{% else %}<span>{{ c.what }}</span>{% endif %}
        {% if c.flag %}<p class="flag"><strong>Warning:</strong> {{ c.flag }}</p>{% endif %}
      </li>
    {% endfor %}
    </ul>
    {% else %}
    <p class="empty">Nothing waiting.</p>
    {% endif %}
  </li>
{% else %}
  <li><p class="empty">Nothing is waiting from today on.</p></li>
{% endfor %}
</ol>
{% if more %}<p data-more="{{ more }}">And {{ more }} more later on: show them week by week.</p>{% endif %}

<section aria-labelledby="feed-heading" class="feed">
  <h2 id="feed-heading">In your own calendar</h2>
  <p>A feed shows these changes in the calendar you already use (read only). Its address is a password: anyone who has it sees the times and titles in it. It works while you keep opening Scheduling from Dee Wan (for 30 days after the last time), and stops when you revoke it or make a new one.</p>
  {% if feed_url %}
  <div class="notice" role="status">
    <p><strong>Your feed's address: copy it now.</strong> It is shown this once; Scheduling keeps only a fingerprint of it. Add it to your calendar as a subscription (by URL).</p>
    <p><code class="secret-value" data-calendar-feed>{{ feed_url }}</code></p>
  </div>
  {% elif feed_made %}
  <p data-calendar-feed-made>You have a feed, made {{ feed_made }}. Lost its address? Make a new one: the old one stops.</p>
  {% endif %}
  <div class="inline">
    <form method="post" action="/installations/{{ installation_id }}/calendar/feed">
      {{ session_fields(csrf_token, opened_for, tab) }}
      <button type="submit"{% if feed_made or feed_url %} class="secondary"{% endif %}>{% if feed_made or feed_url %}Make a new address{% else %}Make a feed address{% endif %}</button>
    </form>
    {% if feed_made or feed_url %}
    <form method="post" action="/installations/{{ installation_id }}/calendar/feed/revoke">
      {{ session_fields(csrf_token, opened_for, tab) }}
      <button type="submit" class="danger">Revoke the feed</button>
    </form>
    {% endif %}
  </div>
</section>
{% endblock %}
"""
