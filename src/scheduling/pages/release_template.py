"""A release's page: what it is (and is not: atomic), its items in send order as cards, and the
forms that act on it; and the installation's releases, one line each. Sources only: the pages
render them compiled."""

RELEASE = """{% extends "base.html" %}
{% from "cards.html" import schedule_card, session_fields %}
{% from "pager.html" import page_info, page_links %}
{% block main %}
<section class="release" data-release-id="{{ release_id }}" data-release-status="{{ status }}">
<h1>Release “{{ release_name }}”</h1>
{% if error %}<div class="problem" role="alert" data-error-code="{{ error_code }}"><p>{{ error }}</p></div>{% endif %}
{% if notice %}<div class="notice" role="status" data-notice><p>{{ notice }}</p>{% for u in untouched %}{% if loop.first %}<ul>{% endif %}<li data-untouched="{{ u.schedule_id }}"><code>{{ u.schedule_id }}</code>: {{ u.why }}</li>{% if loop.last %}</ul>{% endif %}{% endfor %}</div>{% endif %}
<dl class="facts">
  <dt>When</dt><dd><time datetime="{{ when_iso }}">{{ when_label }}</time></dd>
  <dt>Status</dt><dd><span class="status status-{{ status }}">{{ status_label }}</span></dd>
  <dt>Made by</dt><dd>{{ created_by_name }}</dd>
  <dt>Checked</dt><dd data-checked>{{ checked_label }}</dd>
</dl>
<p class="hint">Its items are sent one at a time, in this order, at its time. Dee Wan applies each change on its own: when an item is not done, the items after it are held (never sent) until someone resumes or cancels them, and what was applied before it stays applied. Scheduling cannot undo a change Dee Wan applied.</p>
{% if held %}<div class="warning" data-held-by="{{ held_by }}"><p><strong>Held.</strong> {{ held }}</p></div>{% endif %}
{% if resume %}
<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/resume" class="resume">
  {{ session_fields(csrf_token, opened_for, tab) }}
  <fieldset>
    <legend>Resume from <code>{{ held_by }}</code>, now</legend>
    <label><input type="radio" name="how" value="as_is" checked> Send it again as it is, pinned to <code>{{ resume.version }}</code></label>
    {% if resume.repin_version %}<label><input type="radio" name="how" value="repin"> Pin <code>{{ resume.repin_version }}</code> instead (what Dee Wan reports now), then send it</label>
    <input type="hidden" name="version_id" value="{{ resume.current }}"><input type="hidden" name="published_version_id" value="{{ resume.published or '' }}">{% endif %}
    <label><input type="radio" name="how" value="remove"> Take it out of the release, and send the rest</label>
  </fieldset>
  <button type="submit">Resume</button>
</form>
{% endif %}
{% if items %}
{{ page_info(pager) }}
<ol class="schedules release-items" aria-label="Items in send order">
{% for s in items %}{{ schedule_card(s, card_page) }}{% endfor %}
</ol>
{{ page_links(pager) }}
{% else %}
<p>No items: add one from a content's page in Dee Wan (Schedule, then this release).</p>
{% endif %}
{% if reorder %}
<h2>Order</h2>
<ol class="reorder">
{% for item in reorder %}
  <li data-order-of="{{ item.id }}"><code>{{ item.id }}</code> ({{ item.change }})
  {% for step, label in item.steps %}<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/{{ step }}" class="inline">{{ session_fields(csrf_token, opened_for, tab) }}<input type="hidden" name="schedule_id" value="{{ item.id }}"><button type="submit" class="secondary">{{ label }}<span class="visually-hidden"> {{ item.id }}</span></button></form>{% endfor %}
  </li>
{% endfor %}
</ol>
{% endif %}
{% if open %}
<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/check" class="inline">{{ session_fields(csrf_token, opened_for, tab) }}<button type="submit" class="secondary">Check now</button></form>
<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/rename">
  {{ session_fields(csrf_token, opened_for, tab) }}
  <label for="release-name">Name</label>
  <input id="release-name" name="name" maxlength="100" value="{{ kept.name }}">
  <button type="submit" class="secondary">Rename</button>
</form>
{% if status != "held" %}
<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/move">
  {{ session_fields(csrf_token, opened_for, tab) }}
  <label for="release-time">New time</label>
  <input id="release-time" type="datetime-local" name="local_time" value="{{ kept.local_time }}">
  <label for="release-zone">Time zone</label>
  <input id="release-zone" name="timezone" value="{{ kept.timezone }}">
  <input type="hidden" name="fold" value="{{ kept.fold }}">
  <button type="submit" class="secondary">Move the release</button>
</form>
{% endif %}
<form method="post" action="/installations/{{ installation_id }}/releases/{{ release_id }}/cancel">
  {{ session_fields(csrf_token, opened_for, tab) }}
  <button type="submit" class="danger">{% if status == "held" %}Cancel the rest{% else %}Cancel the release{% endif %}</button>
  <span class="hint">Nothing is sent to Dee Wan; nothing already applied is undone.</span>
</form>
{% endif %}
<p class="support">For support: release {{ release_id }}.</p>
</section>
{% endblock %}
"""

RELEASES = """{% extends "base.html" %}
{% block main %}
<h1>Releases</h1>
<p>A release is several pinned changes sent one at a time, in order, at one time. Make one, or add to one, from a content's page: open it in Dee Wan, press Schedule, then choose a release.</p>
{% if releases %}
<ul class="releases" aria-label="Releases">
{% for r in releases %}
  <li class="release-line" data-release-id="{{ r.id }}" data-release-status="{{ r.status }}">
    <a href="{{ r.href }}">“{{ r.name }}”</a>: {{ r.items }}, at <time datetime="{{ r.when_iso }}">{{ r.when }}</time>.
    <span class="status status-{{ r.status }}">{{ r.status_label }}</span>
  </li>
{% endfor %}
</ul>
{% else %}
<p class="empty" data-releases-empty>This installation has no releases.</p>
{% endif %}
{% endblock %}
"""
