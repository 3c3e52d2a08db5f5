"""Every page template, by name: the layout and the shared cards (`http/html/`) and each
room's own (`pages/<room>/<room>_template.py`). Kept in Python so they ship inside the
Worker bundle with the code.

These are the sources: the pages render them compiled ahead of time
(`http/html/compiled_templates.py`, written by `python -m scripts.compile_templates`), so
nothing imports this module at run time. Autoescaping everything; no script anywhere: every page
works with forms and links alone.
"""

from __future__ import annotations

from scheduling.http.html.card_template import CARDS, PAGER, PIN_FIELDS
from scheduling.http.html.layout_template import BASE, ERROR, NEWS
from scheduling.pages.admin.operator_template import OPERATOR
from scheduling.pages.agents.agents_template import AGENT_KEY, AGENTS
from scheduling.pages.calendar.calendar_template import CALENDAR
from scheduling.pages.cancel_template import CANCEL
from scheduling.pages.content.content_template import CONTENT
from scheduling.pages.home_template import HOME
from scheduling.pages.manage.manage_template import MANAGE
from scheduling.pages.notifications.notifications_template import (
    DELIVERIES,
    ENDPOINT_CONFIRM,
    NOTIFICATIONS,
)
from scheduling.pages.release_template import RELEASE, RELEASES

SOURCES = {
    "base.html": BASE,
    "error.html": ERROR,
    "pin_fields.html": PIN_FIELDS,
    "pager.html": PAGER,
    "cards.html": CARDS,
    "content.html": CONTENT,
    "manage.html": MANAGE,
    "agents.html": AGENTS,
    "agent_key.html": AGENT_KEY,
    "notifications.html": NOTIFICATIONS,
    "deliveries.html": DELIVERIES,
    "endpoint_confirm.html": ENDPOINT_CONFIRM,
    "cancel.html": CANCEL,
    "calendar.html": CALENDAR,
    "releases.html": RELEASES,
    "news.html": NEWS,
    "home.html": HOME,
    "operator.html": OPERATOR,
    "release.html": RELEASE,
}
