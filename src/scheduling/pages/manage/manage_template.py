"""The manage view: every schedule of the installation, fifty to a page, in agenda order."""

MANAGE = """{% extends "base.html" %}
{% from "cards.html" import schedule_list %}
{% from "pager.html" import page_links %}
{% block main %}
<h1>All schedules</h1>
<p>Every schedule of this installation: what needs attention first, then what is coming up by day, then what is finished. To create one, use <strong>Schedule</strong> on a content item in Dee Wan. To be told when one cannot be kept, see {% for r in rooms if r.name == "notifications" %}<a href="{{ r.href }}">Notifications</a>{% else %}Notifications{% endfor %}.</p>
{% include "news.html" %}
{% if flash %}<div class="notice" role="status"{% if cancelled_id %} data-cancelled="{{ cancelled_id }}"{% endif %}{% if dismissed_id %} data-dismissed="{{ dismissed_id }}"{% endif %}><p>{{ flash }}</p></div>{% endif %}

<nav class="filters" aria-label="Show schedules">
  <ul>
  {% for f in filters %}
    <li><a href="{{ f.href }}" data-filter="{{ f.name }}" data-count="{{ f.count }}"{% if f.current %} aria-current="page"{% endif %}>{{ f.label }} <span class="count">({{ f.count }})</span></a></li>
  {% endfor %}
  </ul>
</nav>

<form method="get" action="/installations/{{ installation_id }}" class="zone-form">
  {% if tab %}<input type="hidden" name="tab" value="{{ tab }}">{% endif %}
  {% if show != "all" %}<input type="hidden" name="show" value="{{ show }}">{% endif %}
  {% if page_number > 1 %}<input type="hidden" name="page" value="{{ page_number }}">{% endif %}
  <div class="field">
    <label for="agenda-zone">Days and times in</label>
    <p class="hint" id="agenda-zone-hint">{% if zone_note %}<span data-zone-note>{{ zone_note }}</span> {% endif %}An IANA name such as Europe/Paris, in any case; type to see suggestions.</p>
    <div class="inline">
      <input type="text" id="agenda-zone" name="zone" list="zones" autocomplete="off" spellcheck="false" value="{{ zone_input }}" aria-describedby="agenda-zone-hint{% if zone_problem %} zone-problem{% endif %}"{% if zone_problem %} aria-invalid="true"{% endif %}>
      <button type="submit">Show</button>
    </div>
    <datalist id="zones">{% for z in zones %}<option value="{{ z }}"></option>{% endfor %}</datalist>
  </div>
</form>
{% if zone_problem %}<div class="problem" role="alert" id="zone-problem" data-error-code="unknown_timezone"><p>{{ zone_problem }}{% if zone_suggestions %} Did you mean {% for s in zone_suggestions %}<a href="{{ s.href }}" data-zone-suggestion="{{ s.zone }}">{{ s.zone }}</a>{% if not loop.last %}{% if loop.revindex == 2 %} or {% else %}, {% endif %}{% endif %}{% endfor %}?{% endif %}</p><p class="support">For support: code unknown_timezone.</p></div>{% endif %}
{% for what, sentence in notes %}<div class="warning" role="status" data-notice="{{ what }}"><p>{{ sentence }}</p></div>{% endfor %}
{% if only_href %}<div class="warning" role="status" data-notice="one_schedule"><p>Showing the one schedule a link asked for. <a href="{{ only_href }}">Show all schedules</a>.</p></div>{% endif %}
{% if titles_note %}<div class="warning" role="status" data-titles-missing="{{ titles_missing }}"><p>{{ titles_note }}</p></div>{% endif %}

<p class="page-info" data-page="{{ pager.page_number }}" data-zone="{{ zone }}">{% if pager.total and pager.last_shown >= pager.first_shown %}Showing {{ pager.first_shown }}–{{ pager.last_shown }} of {{ pager.total }}, page {{ pager.page_number }} of {{ pager.last_page }}. {% endif %}Now in {{ zone }}: {{ now_label }}.</p>
{{ page_links(pager, "top") }}

{% for section in sections %}
<section aria-labelledby="group-{{ section.name }}" data-group="{{ section.name }}">
  <h2 id="group-{{ section.name }}">{{ section.label }}</h2>
  {% if section.days %}
  {% for day in section.days %}
  <h3 class="day" id="day-{{ day.key }}" data-day="{{ day.key }}">{{ day.label }}</h3>
  {{ schedule_list(day.cards, card_page, section.label ~ ", " ~ day.label, 4) }}
  {% endfor %}
  {% else %}
  {{ schedule_list(section.cards, card_page, section.label, 3, empty="") }}
  {% endif %}
  {% if section.replaced %}
  <details class="history" data-replaced-count="{{ section.replaced_total }}"{% if not section.cards %} open{% endif %}>
    <summary>Replaced by a newer schedule: {{ section.replaced_total }}{% if section.replaced|length != section.replaced_total %} ({{ section.replaced|length }} on this page){% endif %}</summary>
    {{ schedule_list(section.replaced, card_page, "Replaced by a newer schedule", 3, empty="") }}
  </details>
  {% endif %}
</section>
{% else %}
<p class="empty">{% if show != "all" %}No schedules here.{% else %}No schedules yet.{% endif %}</p>
{% endfor %}

{{ page_links(pager, "bottom") }}
{% endblock %}
"""
