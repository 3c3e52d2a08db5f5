"""The agents' page (proposals waiting for a person, the agent keys, the form that mints one),
and the page that shows a new key once."""

from __future__ import annotations

AGENTS = """{% extends "base.html" %}
{% macro session_fields(panel) %}
  <input type="hidden" name="csrf_token" value="{{ panel.csrf_token }}">
  <input type="hidden" name="opened_for" value="{{ panel.opened_for }}">
  {% if panel.tab %}<input type="hidden" name="tab" value="{{ panel.tab }}">{% endif %}
{% endmacro %}
{% block main %}
<h1>Agents</h1>
{% if flash %}<div class="notice" role="status" data-done><p>{{ flash }}</p></div>{% endif %}
<section class="agents" aria-labelledby="proposals-heading">
  <h2 id="proposals-heading">Proposed by agents</h2>
  {% if agents.proposals %}
  <ul class="proposals">
    {% for p in agents.proposals %}
    <li data-proposal-id="{{ p.id }}">
      <p><strong>{{ p.key_name }}</strong> proposes: {{ p.change_words }} on {{ p.when }} — for {{ p.person_name }}</p>
      {% if p.note %}<blockquote class="note">{{ p.note }}</blockquote>{% endif %}
      {% if p.replaces %}<p class="warning" data-warning="replace">Confirming replaces the waiting schedule to {{ p.replaces }}.</p>{% endif %}
      {% if p.collides %}<p class="warning" data-warning="collision">{{ p.collides }}</p>{% endif %}
      {% if p.may_decide %}
      <div class="inline">
      {% if agents.pins %}
      <form method="post" action="/installations/{{ agents.installation_id }}/proposals/{{ p.id }}/confirm" class="inline">
        {{ session_fields(agents) }}
        <input type="hidden" name="version_id" value="{{ agents.pins.current }}">
        <input type="hidden" name="published_version_id" value="{{ agents.pins.published or '' }}">
        <button type="submit" data-proposal-action="confirm">Confirm<span class="visually-hidden"> {{ p.change_words|lower }} on {{ p.when }}</span></button>
      </form>
      {% endif %}
      <form method="post" action="/installations/{{ agents.installation_id }}/proposals/{{ p.id }}/decline" class="inline">
        {{ session_fields(agents) }}
        <button type="submit" class="secondary" data-proposal-action="decline">Decline</button>
      </form>
      </div>
      {% if not agents.pins %}<p>To confirm it, open this content from Dee Wan and press Confirm there: Scheduling pins the version you see then.</p>{% endif %}
      {% else %}
      <p>Dee Wan does not let you make this change, so someone who may confirms or declines it.</p>
      {% endif %}
    </li>
    {% endfor %}
  </ul>
  {% else %}
  <p>No agent proposes anything {{ agents.scope_words }} now.</p>
  {% endif %}

  <h2 id="agent-keys-heading">Agent keys</h2>
  <p>A key lets an agent (an assistant, a release bot) read the schedules {{ agents.scope_words }} and propose new ones; only a person confirms them. It acts for you and can never do more than you may.</p>
  {% if agents.keys %}
  <ul class="agent-keys">
    {% for k in agents.keys %}
    <li data-agent-key-id="{{ k.id }}">{{ k.name }}, for {{ k.person_name }}: until {{ k.expires }}; {{ k.last_use }}{% if k.read_only %}; reads only{% endif %}.
      <form method="post" action="/installations/{{ agents.installation_id }}/agent-keys/{{ k.id }}/revoke" class="inline">
        {{ session_fields(agents) }}
        <button type="submit" class="secondary">Revoke<span class="visually-hidden"> {{ k.name }}</span></button>
      </form>
    </li>
    {% endfor %}
  </ul>
  {% endif %}
  <form method="post" action="/installations/{{ agents.installation_id }}/agent-keys" class="mint-key">
    {{ session_fields(agents) }}
    <label for="agent-key-name">Agent's name</label>
    <input id="agent-key-name" name="name" maxlength="80" required>
    <label for="agent-key-days">Lasts</label>
    <select id="agent-key-days" name="days">
      {% for d in agents.day_choices %}<option value="{{ d }}"{% if d == 7 %} selected{% endif %}>{{ d }} day{{ 's' if d != 1 }}</option>{% endfor %}
    </select>
    <button type="submit">Create a key</button>
  </form>
</section>
{% endblock %}
"""

AGENT_KEY = """{% extends "base.html" %}
{% block main %}
<h1>{{ title }}</h1>
<p role="status">This is the key for <strong>{{ key_name }}</strong>, until {{ expires }}. It is shown this once: copy it now. Scheduling keeps only a fingerprint of it.</p>
<p><label for="agent-key">Agent key</label><br><input id="agent-key" readonly value="{{ secret }}" size="50" data-agent-key></p>
<p>Give the agent's MCP client this address and header:</p>
<pre><code>{{ snippet }}</code></pre>
<p><a href="{{ back_href }}">Back to the agents page</a></p>
{% endblock %}
"""
