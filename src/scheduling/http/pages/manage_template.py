"""The manage view: every schedule of the installation, fifty to a page, in agenda order."""

MANAGE = """{% extends "base.html" %}
{% from "cards.html" import schedule_list %}
{% from "pager.html" import page_links %}
{% block main %}
<h1>All schedules</h1>
<p>Every schedule of this installation: what needs attention first, then what is coming up by day, then what is finished. To create one, use <strong>Schedule</strong> on a content item in Dee Wan. To be told when one cannot be kept, see <a href="#notifications">Notifications</a>.</p>
{% if flash %}<div class="notice" role="status"><p>{{ flash }}</p></div>{% endif %}

<nav class="filters" aria-label="Show schedules">
  <ul>
  {% for f in filters %}
    <li><a href="{{ f.href }}" data-filter="{{ f.name }}" data-count="{{ f.count }}"{% if f.current %} aria-current="page"{% endif %}>{{ f.label }} <span class="count">({{ f.count }})</span></a></li>
  {% endfor %}
  </ul>
</nav>

<form method="get" action="/installations/{{ installation_id }}" class="zone-form">
  <input type="hidden" name="show" value="{{ show }}">
  <div class="field">
    <label for="agenda-zone">Days and times in</label>
    <p class="hint" id="agenda-zone-hint">An IANA name such as Europe/Paris; type to see suggestions.</p>
    <div class="inline">
      <input type="text" id="agenda-zone" name="zone" list="zones" autocomplete="off" spellcheck="false" value="{{ zone_input }}" aria-describedby="agenda-zone-hint{% if zone_problem %} zone-problem{% endif %}"{% if zone_problem %} aria-invalid="true"{% endif %}>
      <button type="submit">Show</button>
    </div>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
</form>
{% if zone_problem %}<div class="problem" role="alert" id="zone-problem" data-error-code="unknown_timezone"><p>{{ zone_problem }}</p></div>{% endif %}

<p class="page-info" data-page="{{ pager.page_number }}" data-zone="{{ zone }}">{% if pager.total %}Showing {{ pager.first_shown }}–{{ pager.last_shown }} of {{ pager.total }}, page {{ pager.page_number }} of {{ pager.last_page }}. {% endif %}Now in {{ zone }}: {{ now_label }}.</p>

{% for section in sections %}
<section aria-labelledby="group-{{ section.name }}" data-group="{{ section.name }}">
  <h2 id="group-{{ section.name }}">{{ section.label }}</h2>
  {% if section.days %}
  {% for day in section.days %}
  <h3 class="day" id="day-{{ day.key }}" data-day="{{ day.key }}">{{ day.label }}</h3>
  {{ schedule_list(day.cards, card_page, section.label ~ ", " ~ day.label, 4) }}
  {% endfor %}
  {% else %}
  {{ schedule_list(section.cards, card_page, section.label, 3) }}
  {% endif %}
</section>
{% else %}
<p class="empty">{% if pager.page_number > 1 and pager.total %}There is no page {{ pager.page_number }}: <a href="{{ pager.last_href }}">go to page {{ pager.last_page }}</a>.{% elif show != "all" %}No schedules here.{% else %}No schedules yet.{% endif %}</p>
{% endfor %}

{{ page_links(pager) }}
{% include "notifications.html" %}
{% endblock %}
"""
