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
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Local Dee Wan (fake core)</title><link rel="stylesheet" href="/style.css"></head><body><main>
<h1>Local Dee Wan</h1>
<p>Site {{ site.id }}, time zone {{ site.timezone }}.
Core base URL {{ base_url }}.</p>
<nav aria-label="On this page"><a href="#installations">Installations</a> · <a href="#manage">Manage</a> ·
<a href="#content">Content</a> · <a href="#transitions">Transitions received{% if tick %} and Run the tick now{% endif %}</a> · <a href="#webhooks">Webhooks received</a> · <a href="#chat">Chat</a> · <a href="#failures">Fail on purpose</a></nav>
{% if notice %}<p class="notice" role="status">{{ notice }}</p>{% endif %}
<h2 id="installations">Installations</h2>
<p>Rotating gives the installation a new token; the old one stops working at once.
A rotation code (dwa_…) is minted by the plugin's operator for that installation.</p>
<table class="stack"><thead><tr><th scope="col">id</th><th scope="col">plugin</th><th scope="col">status</th><th scope="col">capabilities</th><th scope="col">models</th>
<th scope="col">actions</th></tr></thead><tbody>
{% for i in installations %}
<tr><td data-label="id">{{ i.id }}</td><td data-label="plugin">{{ i.plugin_origin }}</td><td data-label="status">{{ i.status }}</td><td data-label="capabilities">{{ i.capabilities }}</td><td data-label="models">{{ i.models }}</td><td data-label="actions">
{%- if i.active %}
{{- action_form("/ui/uninstall", "Uninstall", {"installation_id": i.id}) }}
{%- if i.one_click %}{{ action_form("/ui/rotate-now", "Rotate token", {"installation_id": i.id}) }}{% endif -%}
<form method="post" action="/ui/rotate"><input type="hidden" name="installation_id" value="{{ i.id }}">
<label>Rotation code for {{ i.id }} <input name="code" required autocomplete="off"></label>
<button>Rotate with code</button></form>
{%- endif -%}
</td></tr>
{% endfor %}
</tbody></table>
<form method="post" action="/ui/install">
<label>Plugin origin <input name="plugin_origin" value="{{ plugin_origin }}"></label>
<label>Activation code <input name="code" required autocomplete="off"></label>
<button>Install</button></form>
{% if one_click %}
<p>Or, as the operator of the plugin at {{ plugin_origin }}: {{ action_form("/ui/mint-install", "Mint a code and install") }}</p>
{% endif %}
<h2 id="manage">Manage</h2>
<p>Dee Wan offers the Manage launch to site admins only.</p>
{% if not active %}
<p>No active installation.</p>
{% elif not admins %}
<p>Nobody on this site is a site admin, so no one is offered Manage. Add one with
<code>POST /__fake/seed</code> and <code>{"persons": [{"id": "usr_admin", "name": "…", "role": "admin"}]}</code>
(a state saved before persons had roles has none).</p>
{% else %}
<p>{% for id in active %}{{ action_form("/ui/launch", "Scheduling (" ~ id ~ ")", {"installation_id": id}, admins) }}{% endfor %}</p>
{% endif %}
<h2 id="content">Content</h2>
<p>{{ stale_note }}</p>
<table class="stack content"><thead><tr><th scope="col">id</th><th scope="col">title</th><th scope="col">model</th><th scope="col">locale</th><th scope="col">primary</th>
<th scope="col">current</th><th scope="col">published</th><th scope="col">revision</th><th scope="col">actions</th></tr></thead><tbody>
{% for c in contents %}
<tr><td data-label="id">{{ c.id }}</td><td data-label="title">{{ c.title }}</td><td data-label="model">{{ c.model }}</td><td data-label="locale">{{ c.locale }}</td><td data-label="primary">{{ c.primary_id }}</td><td data-label="current">{{ c.current }}</td><td data-label="published">{{ c.published }}</td><td data-label="revision">{{ c.revision }}</td><td data-label="actions">
{%- for id in active %}{{ action_form("/ui/launch", "Schedule (" ~ id ~ ")", {"installation_id": id, "content_id": c.id}, persons) }}{% endfor -%}
{{ action_form("/ui/edit", "New version", {"content_id": c.id}) }}</td></tr>
{% endfor %}
</tbody></table>
<h2 id="transitions">Transitions received</h2>
{% if tick %}
<p>The plugin's cron runs a tick at the start of every minute; a tick sends what is due.
{{ action_form("/ui/tick", "Run the tick now") }}</p>
{% endif %}
{% if not log %}
<p>No transition command received yet.</p>
{% else %}
<p>Every transition command the plugin sent, newest first{% if log_total > log|length %} (the last {{ log|length }} of {{ log_total }} kept){% endif %}. Times are UTC.</p>
<table class="stack log"><thead><tr>{% for heading in log_headings %}<th scope="col">{{ heading }}</th>{% endfor %}</tr></thead><tbody>
{% for row in log %}
<tr>{% for cell in row %}<td data-label="{{ log_headings[loop.index0] }}">{{ cell }}</td>{% endfor %}</tr>
{% endfor %}
</tbody></table>
{% endif %}
<h2 id="webhooks">Webhooks received</h2>
<p>A receiver for the plugin's notifications: add <code>{{ webhook_url }}</code> as an endpoint under Notifications on the plugin's Manage page, then paste here the signing secret it shows once. Each delivery is checked as a receiver must (Standard Webhooks: the signature over id, timestamp and body, a timestamp within five minutes); one that cannot be verified is answered 401, and the plugin tries it again.</p>
<form method="post" action="/ui/webhook-secret">
<label>Signing secret <input name="secret" required autocomplete="off" spellcheck="false"></label>
<button>Keep secret</button></form>
<p>{% if secrets_kept %}{{ secrets_kept }} signing secret{% if secrets_kept > 1 %}s{% endif %} kept (not shown).{% else %}No signing secret pasted yet.{% endif %}</p>
{% if not webhooks %}
<p>No webhook received yet.</p>
{% else %}
<table class="stack webhooks"><thead><tr><th scope="col">time (UTC)</th><th scope="col">event</th><th scope="col">webhook-id</th><th scope="col">what it says</th><th scope="col">signature</th></tr></thead><tbody>
{% for row in webhooks %}
<tr data-verified="{{ 'true' if row[4] == 'verified' else 'false' }}">{% for cell in row %}<td data-label="{{ ['time (UTC)', 'event', 'webhook-id', 'what it says', 'signature'][loop.index0] }}">{{ cell }}</td>{% endfor %}</tr>
{% endfor %}
</tbody></table>
{% endif %}
<h2 id="chat">Chat</h2>
<p>A chat for the plugin's chat endpoints: add <code>{{ chat_url }}</code> as an endpoint of kind "Chat message" under Notifications on the plugin's Manage page (any path after <code>/chat/</code> names a channel). It takes what Slack's incoming webhooks take, <code>{"text": "…"}</code>, and shows each message as a chat would.</p>
{% if not chat_messages %}
<p>No chat message yet.</p>
{% else %}
<ol class="chat" aria-label="Chat messages, oldest first">
{% for m in chat_messages %}
<li class="chat-message" data-chat-channel="{{ m.channel }}"><p class="chat-from"><strong>Scheduling</strong> <span class="chat-app">app</span> · #{{ m.channel }} · {{ m.when }} UTC</p>
<div class="chat-text">{% for line in m.lines %}<p>{% for piece, link in line %}{% if link %}<a href="{{ piece }}">{{ piece }}</a>{% else %}{{ piece }}{% endif %}{% endfor %}</p>{% endfor %}</div></li>
{% endfor %}
</ol>
{% endif %}
<h2 id="failures">Fail on purpose</h2>
<p>See how the plugin tells of each failure, and how a person finishes it from its pages. Each switch acts on Dee Wan's answers to the plugin (this page keeps working).</p>
<p data-failures>{% if failures %}{{ failures|join(" ") }}{% else %}Now: Dee Wan answers normally.{% endif %}</p>
<form method="post" action="/ui/fail-down"><label>Be down for <input name="minutes" type="number" min="1" max="60" value="2" required> minutes</label> <button>Be down</button></form>
{{ action_form("/ui/fail-refuse", "Refuse the next change") }}
<form method="post" action="/ui/fail-garbage"><label>Answer garbage to the next <select name="endpoint"><option value="content">content read</option><option value="transitions">change command</option></select></label> <button>Answer garbage</button></form>
<form method="post" action="/ui/fail-slow"><label>Answer every call <input name="seconds" type="number" min="0" max="30" step="1" value="5" required> seconds late</label> <button>Answer slowly</button></form>
{{ action_form("/ui/fail-normal", "Back to normal") }}
</main></body></html>
"""

# Wide: tables. Narrow (a phone): each row becomes a card, each cell labelled by its heading.
STYLE = b"""body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem}
nav{margin:.5rem 0 1rem}.content td form{white-space:nowrap}
table{border-collapse:collapse;margin-bottom:1.5rem}td,th{border:1px solid #ccc;padding:.3rem .5rem}
form{display:inline-block;margin:.15rem .3rem .15rem 0}label,form select{margin-right:.3rem}
button,select,input{min-height:26px;min-width:26px;max-width:100%}
.notice{background:#ffd;padding:.5rem;border:1px solid #cc9}.log td:first-child{white-space:nowrap}
.chat{list-style:none;padding:0;max-width:48rem}.chat-message{border-left:4px solid #4a154b;padding:.3rem .8rem;margin:0 0 .8rem;background:#f8f8fa}
.chat-from{margin:0 0 .3rem;color:#333}.chat-app{font-size:.75rem;background:#ddd;border-radius:3px;padding:0 .25rem}
.chat-text p{margin:.1rem 0;overflow-wrap:anywhere}
@media (max-width:48rem){
body{margin:1rem}
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:auto}
table.stack thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
table.stack tr{border:1px solid #ccc;margin-bottom:.75rem;padding:.25rem 0}
table.stack td{border:0;padding:.15rem .5rem;overflow-wrap:anywhere}
.content td form{white-space:normal}
table.stack td::before{content:attr(data-label) ": ";font-weight:bold}
.log td:first-child{white-space:normal}
}
"""


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.DictLoader({"forms.html": FORMS, "home.html": HOME}),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
