"""The operator page: the runner now, its history as inline SVG charts (no script; classes for
colours, styled by the one stylesheet), each chart's text equivalent, and the tables."""

OPERATOR = """{% extends "base.html" %}
{% macro key(item) %}<svg class="key" viewBox="0 0 28 14" width="28" height="14" aria-hidden="true" focusable="false">{% if item.shape == "line" %}<line class="series {{ item.css }}" x1="2" y1="7" x2="26" y2="7"/>{% elif item.shape == "mark" %}<line class="{{ item.css }}" x1="14" y1="0" x2="14" y2="14"/>{% else %}<rect class="bar {{ item.css }}" x="4" y="1" width="20" height="12"/>{% endif %}</svg>{% endmacro %}
{% macro chart(c) %}
<figure class="chart" data-chart="{{ c.id }}" aria-labelledby="{{ c.id }}-title">
  <h4 id="{{ c.id }}-title">{{ c.title }}</h4>
  <svg viewBox="0 0 {{ c.width }} {{ c.height }}" role="img" aria-labelledby="{{ c.id }}-title" aria-describedby="{{ c.id }}-summary" focusable="false">
    {% for g in c.gaps %}<rect class="gap" x="{{ g.x }}" y="{{ g.y }}" width="{{ g.width }}" height="{{ g.height }}"/>{% endfor %}
    {% for t in c.y_ticks %}<line class="grid" x1="{{ c.plot_left }}" y1="{{ t.position }}" x2="{{ c.plot_right }}" y2="{{ t.position }}"/><text class="y-label" x="{{ c.plot_left - 8 }}" y="{{ t.position }}">{{ t.label }}</text>{% endfor %}
    {% for r in c.rects %}<rect class="bar {{ r.css }}" x="{{ r.x }}" y="{{ r.y }}" width="{{ r.width }}" height="{{ r.height }}"/>{% endfor %}
    {% if c.rule %}<line class="series rule" x1="{{ c.plot_left }}" y1="{{ c.rule.y }}" x2="{{ c.plot_right }}" y2="{{ c.rule.y }}"/>{% endif %}
    {% for l in c.lines %}{% if l.d %}<path class="series {{ l.css }}" d="{{ l.d }}"/>{% endif %}{% for x, y in l.dots %}<circle class="dot {{ l.css }}" cx="{{ x }}" cy="{{ y }}" r="5"/>{% endfor %}{% endfor %}
    {% for x in c.markers %}<line class="failed" x1="{{ x }}" y1="{{ c.plot_top }}" x2="{{ x }}" y2="{{ c.plot_bottom }}"/>{% endfor %}
    <line class="axis" x1="{{ c.plot_left }}" y1="{{ c.plot_bottom }}" x2="{{ c.plot_right }}" y2="{{ c.plot_bottom }}"/>
    {% for t in c.x_ticks %}<line class="axis{% if t.minor %} minor{% endif %}" x1="{{ t.position }}" y1="{{ c.plot_bottom }}" x2="{{ t.position }}" y2="{{ c.plot_bottom + 6 }}"/><text class="x-label{% if t.minor %} minor{% endif %}" x="{{ t.position }}" y="{{ c.height - 6 }}">{{ t.label }}</text>{% endfor %}
  </svg>
  <ul class="legend">{% for item in c.legend %}<li>{{ key(item) }}{{ item.label }}</li>{% endfor %}</ul>
  <p class="summary" id="{{ c.id }}-summary">{{ c.summary }}</p>
</figure>
{% endmacro %}
{% block main %}
<h1>Scheduling: the runner</h1>
<p>For the operator: how the every-minute runner has done, from the tick history this plugin keeps for 7 days. Times are in UTC.</p>
<dl class="facts status-facts" data-stalled="{{ 'true' if stalled else 'false' }}">
{% for f in facts %}  <dt>{{ f.term }}</dt><dd{% if stalled and loop.first %} class="stalled"{% endif %}>{{ f.value }}</dd>
{% endfor %}</dl>
<p class="hint">Machines read the same: <code>/healthz</code> for uptime monitors, <code>/admin/metrics</code> for Prometheus, <code>/admin/status</code> as JSON.</p>

<section class="attention" aria-labelledby="attention">
  <h2 id="attention">Needs attention</h2>
  <h3 id="failing">Dee Wan failing</h3>
  {% for f in failing %}
  <div class="failing" data-failing="{{ f.id }}">
    <p><strong>Installation <code>{{ f.id }}</code></strong> (site <code>{{ f.site_id }}</code>): its Dee Wan has failed since {{ f.since }}. {{ f.schedules|length }} schedule{{ "" if f.schedules|length == 1 else "s" }} will try again:</p>
    <ul class="retrying">
    {% for r in f.schedules %}<li data-schedule="{{ r.schedule_id }}">{{ r.change }} of content <code>{{ r.content_id }}</code>, due {{ r.due }}; {{ r.next_try }}. Last try: {{ r.reason }} <span class="support">({{ r.support }})</span></li>
    {% endfor %}</ul>
  </div>
  {% else %}<p class="empty">No installation's Dee Wan is failing: every schedule's last try was answered.</p>{% endfor %}
  <h3 id="refusals">Latest refusals</h3>
  {% if refusals %}
  <p class="table-title" id="refusals-caption">{{ refusals_caption }}</p>
  <div class="table-frame" role="region" aria-labelledby="refusals-caption" tabindex="0">
  <table class="stacks" data-table="refusals" aria-labelledby="refusals-caption">
    <thead><tr><th scope="col">Refused at</th><th scope="col">What</th><th scope="col">Why</th><th scope="col">Installation</th></tr></thead>
    <tbody>
    {% for r in refusals %}<tr data-code="{{ r.code }}"{% if r.ended_by %} data-ended-by="{{ r.ended_by }}"{% endif %}><td class="when" data-label="Refused at">{{ r.when }}</td><td data-label="What">{{ r.change }} of content <code>{{ r.content_id }}</code></td><td class="why" data-label="Why">{{ r.reason }} <span class="support">(code {{ r.code }})</span></td><td data-label="Installation"><code>{{ r.installation_id }}</code></td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No schedule has been refused.</p>{% endif %}
  <h3 id="releases">Held releases</h3>
  <p data-releases>Releases by status: {{ releases or "none yet" }}.</p>
  {% if held %}
  <p class="table-title" id="held-caption">Held releases: an item was not done and the rest waits for a person; the longest held first</p>
  <div class="table-frame" role="region" aria-labelledby="held-caption" tabindex="0">
  <table class="stacks" data-table="held" aria-labelledby="held-caption">
    <thead><tr><th scope="col">Release</th><th scope="col">Installation</th><th scope="col">Item not done, and why</th><th scope="col">Held since</th></tr></thead>
    <tbody>
    {% for h in held %}<tr data-release-id="{{ h.id }}" data-release-status="held"><td data-label="Release">“{{ h.name }}” <code>{{ h.id }}</code></td><td data-label="Installation"><code>{{ h.installation_id }}</code></td><td class="why" data-label="Item not done, and why"><code>{{ h.item }}</code>: {{ h.reason }}{% if h.code %} <span class="support">(code {{ h.code }})</span>{% endif %}</td><td class="when" data-label="Held since">{{ h.since }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No release is held.</p>{% endif %}
</section>

<section aria-labelledby="installations">
  <h2 id="installations">Installations</h2>
  {% if installations %}
  <p class="table-title" id="installations-caption">Installations with live schedules, refusals in the last 24 hours, or the latest sends; most refusals first</p>
  <div class="table-frame" role="region" aria-labelledby="installations-caption" tabindex="0">
  <table data-table="installations" aria-labelledby="installations-caption">
    <thead><tr><th scope="col">Installation</th><th scope="col">Site</th><th scope="col">Live schedules</th><th scope="col">Refused in 24 h</th><th scope="col">Last send</th></tr></thead>
    <tbody>
    {% for i in installations %}<tr data-installation="{{ i.id }}"><th scope="row"><code>{{ i.id }}</code></th><td><code>{{ i.site_id }}</code></td><td>{{ i.live }}</td><td>{{ i.refused }}</td><td class="when">{{ i.last_send }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p class="empty">No installation yet.</p>{% endif %}
</section>
{% for w in windows %}
<section class="window" aria-labelledby="window-{{ w.name }}" data-window="{{ w.name }}">
  <h2 id="window-{{ w.name }}">{{ w.label }}</h2>
  <p class="hint">Each point is the worst of {{ "an" if w.slot_label == "hour" else "a" }} {{ w.slot_label }} slot; each bar adds up the slot's sends.</p>
  <div class="charts">
  {% for c in w.charts %}{{ chart(c) }}{% endfor %}
  </div>
  <details class="numbers">
    <summary>The same numbers as tables ({{ w.label|lower }})</summary>
    <p class="table-title" id="{{ w.name }}-slots-caption">Ticks by {{ w.slot_label }} slot, {{ w.label|lower }} (UTC)</p>
    <div class="table-frame" role="region" aria-labelledby="{{ w.name }}-slots-caption" tabindex="0">
    <table class="numbers" data-table="{{ w.name }}-slots" aria-labelledby="{{ w.name }}-slots-caption">
      <thead><tr><th scope="col">Slot from</th><th scope="col">Ticks</th><th scope="col">Failed</th><th scope="col">Minutes without a tick</th><th scope="col">Lateness p50 / max</th><th scope="col">Backlog left</th><th scope="col">Completed</th><th scope="col">Will retry</th><th scope="col">Refused</th><th scope="col">Refused unsent</th><th scope="col">Cron delay</th></tr></thead>
      <tbody>
      {% for r in w.rows %}<tr{% if r.failed %} class="failed-row"{% endif %}><th scope="row">{{ r.label }}</th><td>{{ r.ticks }}</td><td>{{ r.failed }}</td><td>{{ r.missed }}</td><td>{{ r.lateness }}</td><td>{{ r.backlog }}</td><td>{{ r.completed }}</td><td>{{ r.retrying }}</td><td>{{ r.refused }}</td><td>{{ r.refused_unsent }}</td><td>{{ r.cron_delay }}</td></tr>
      {% else %}<tr><td colspan="11">No tick recorded.</td></tr>{% endfor %}
      </tbody>
    </table>
    </div>
    <p class="table-title" id="{{ w.name }}-lateness-caption">How late {% if w.sends == 1 %}the one send{% else %}the {{ w.sends }} sends{% endif %} left, {{ w.label|lower }}</p>
    <div class="table-frame" role="region" aria-labelledby="{{ w.name }}-lateness-caption" tabindex="0">
    <table class="numbers" data-table="{{ w.name }}-lateness" aria-labelledby="{{ w.name }}-lateness-caption">
      <thead><tr><th scope="col">After their due time</th><th scope="col">Sends</th></tr></thead>
      <tbody>{% for h in w.histogram %}<tr><th scope="row">{{ h.label }}</th><td>{{ h.count }}</td></tr>{% endfor %}</tbody>
    </table>
    </div>
  </details>
</section>
{% endfor %}

{% endblock %}
"""
