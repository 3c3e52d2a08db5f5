"""The home page's template and stylesheet, kept in Python like the plugin's pages.

One jinja2 Environment, autoescaping everything; the app makes it once and
hands it to the views. The page has no script: every action is a form.
"""

from __future__ import annotations

import jinja2

FORMS = """{% macro action_form(target, label, fields={}, persons=[]) -%}
<form method="post" action="{{ target }}">
{%- for name, value in fields.items() %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}
{%- if persons %}<select name="person_id" aria-label="as person">
{%- for person in persons %}<option value="{{ person.id }}">{{ person.name }}</option>{% endfor -%}
</select>{% endif -%}
<button>{{ label }}</button></form>
{%- endmacro %}
"""

HOME = """{% from "forms.html" import action_form %}
<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Local Dee Wan (fake core)</title><link rel="stylesheet" href="/style.css"></head><body><main>
<h1>Local Dee Wan</h1>
<p>Site {{ site.id }}, time zone {{ site.timezone }}.
Core base URL {{ base_url }}.</p>
{% if notice %}<p class="notice" role="status">{{ notice }}</p>{% endif %}
<h2>Installations</h2>
<p>Rotating gives the installation a new token; the old one stops working at once.
A rotation code (dwa_…) is minted by the plugin's operator for that installation.</p>
<table><tr><th>id</th><th>plugin</th><th>status</th><th>capabilities</th><th>models</th>
<th>actions</th></tr>
{% for i in installations %}
<tr><td>{{ i.id }}</td><td>{{ i.plugin_origin }}</td><td>{{ i.status }}</td><td>{{ i.capabilities }}</td><td>{{ i.models }}</td><td>
{%- if i.active %}
{{- action_form("/ui/uninstall", "Uninstall", {"installation_id": i.id}) }}
{%- if i.one_click %}{{ action_form("/ui/rotate-now", "Rotate token", {"installation_id": i.id}) }}{% endif -%}
<form method="post" action="/ui/rotate"><input type="hidden" name="installation_id" value="{{ i.id }}">
<label>Rotation code for {{ i.id }} <input name="code" required autocomplete="off"></label>
<button>Rotate with code</button></form>
{%- endif -%}
</td></tr>
{% endfor %}
</table>
<form method="post" action="/ui/install">
<label>Plugin origin <input name="plugin_origin" value="{{ plugin_origin }}"></label>
<label>Activation code <input name="code" required autocomplete="off"></label>
<button>Install</button></form>
{% if one_click %}
<p>Or, as the operator of the plugin at {{ plugin_origin }}: {{ action_form("/ui/mint-install", "Mint a code and install") }}</p>
{% endif %}
<h2>Manage</h2>
<p>{% for id in active %}{{ action_form("/ui/launch", "Scheduling (" ~ id ~ ")", {"installation_id": id}, persons) }}{% else %}No active installation.{% endfor %}</p>
<h2>Content</h2>
<p>{{ stale_note }}</p>
<table><tr><th>id</th><th>title</th><th>model</th><th>locale</th><th>primary</th>
<th>current</th><th>published</th><th>revision</th><th>actions</th></tr>
{% for c in contents %}
<tr><td>{{ c.id }}</td><td>{{ c.title }}</td><td>{{ c.model }}</td><td>{{ c.locale }}</td><td>{{ c.primary_id }}</td><td>{{ c.current }}</td><td>{{ c.published }}</td><td>{{ c.revision }}</td><td>
{%- for id in active %}{{ action_form("/ui/launch", "Schedule (" ~ id ~ ")", {"installation_id": id, "content_id": c.id}, persons) }}{% endfor -%}
{{ action_form("/ui/edit", "New version", {"content_id": c.id}) }}</td></tr>
{% endfor %}
</table>
<h2>Transitions received</h2>
{% if not log %}
<p>No transition command received yet.</p>
{% else %}
<p>Every transition command the plugin sent, newest first{% if log_total > log|length %} (the last {{ log|length }} of {{ log_total }}){% endif %}. Times are UTC.</p>
<table class="log"><tr><th scope="col">time (UTC)</th><th scope="col">content</th><th scope="col">title</th><th scope="col">kind</th><th scope="col">pinned version</th><th scope="col">answer</th><th scope="col">applied</th><th scope="col">installation</th></tr>
{% for row in log %}
<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}
</table>
{% endif %}
</main></body></html>
"""

STYLE = b"""body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;margin-bottom:1.5rem}td,th{border:1px solid #ccc;padding:.3rem .5rem}
form{display:inline-block;margin:.15rem .3rem .15rem 0}label{margin-right:.3rem}
button,select,input{min-height:26px;min-width:26px}
.notice{background:#ffd;padding:.5rem;border:1px solid #cc9}.log td:first-child{white-space:nowrap}
"""


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader({"forms.html": FORMS, "home.html": HOME}),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
