"""The confirmation before a cancel: it names what would be cancelled and posts the cancel."""

CANCEL = """{% extends "base.html" %}
{% from "cards.html" import session_fields %}
{% block main %}
<h1>Cancel this schedule?</h1>
<div class="confirm" data-cancel-confirmation="{{ card.id }}">
<dl class="facts">
  <dt>Content</dt><dd>{% if content_title is not none %}“{{ content_title }}”{% else %}<code>{{ card.content_id }}</code> (Dee Wan did not give its title){% endif %}</dd>
  <dt>Change</dt><dd>{{ card.kind_label }} version <code>{{ card.version_id }}</code></dd>
  <dt>When</dt><dd><time datetime="{{ card.when_iso }}">{{ card.when_label }}</time></dd>
  <dt>Requested by</dt><dd>{{ card.requested_by_name }}</dd>
  <dt>Status</dt><dd>{{ card.status_label }}</dd>
</dl>
<p>Once cancelled, it will not be sent. Nothing is sent to Dee Wan now, and nothing already done in Dee Wan is undone.</p>
<form method="post" action="/installations/{{ installation_id }}/schedules/{{ card.id }}/cancel" class="cancel-confirm">
  {{ session_fields(csrf_token, opened_for, tab) }}
  {% for name, value in back %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
  <div class="inline">
    <button type="submit" class="danger">Cancel the schedule</button>
    <a href="{{ back_href }}">Keep it, go back</a>
  </div>
</form>
<p class="support">For support: {{ card.support }}.</p>
</div>
{% endblock %}
"""
