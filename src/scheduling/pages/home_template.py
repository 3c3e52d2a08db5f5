"""`GET /`: what this service is and where to go, for someone who opens its address."""

HOME = """{% extends "base.html" %}
{% block main %}
<h1>Scheduling for Dee Wan</h1>
<p>This service publishes or unpublishes a pinned version of a Dee Wan content item at a
time chosen in a time zone. It is a Dee Wan plugin: there is nothing to browse here.</p>
<h2>Where to go</h2>
<ul>
  <li>To schedule a change, open the content item in Dee Wan and press <strong>Schedule</strong>.</li>
  <li>To see every schedule of a site, a site admin opens <strong>Scheduling</strong> in Dee Wan's plugin menu.</li>
  <li>Operators: <code>GET /admin</code> shows the runner's last day and week (sign in with the operator secret); <code>GET /admin/status</code> and <code>GET /admin/metrics</code> take the operator's bearer token, and <code>GET /healthz</code> is for uptime monitors.</li>
{% if dev_origins %}
  <li>In development, the local Dee Wan:
  {% for origin in dev_origins %}<a href="{{ origin }}/">{{ origin }}</a>{% if not loop.last %}, {% endif %}{% endfor %}.</li>
{% endif %}
</ul>
{% endblock %}
"""
