"""Every page template's source, by name, for `python -m scripts.compile_templates`: the pages
render them compiled (`http/html/compiled_templates.py`), so nothing imports this at run time.
No script anywhere: every page works with forms and links alone.
"""

from __future__ import annotations

from scheduling.http.html.templates import BASE, CARDS, ERROR, NEWS, PAGER
from scheduling.pages.agents import AGENT_KEY, AGENTS
from scheduling.pages.calendar import CALENDAR
from scheduling.pages.cancel import CANCEL
from scheduling.pages.content import CONTENT
from scheduling.pages.home import HOME
from scheduling.pages.manage import MANAGE
from scheduling.pages.notifications import DELIVERIES, ENDPOINT_CONFIRM, NOTIFICATIONS
from scheduling.pages.operator import OPERATOR
from scheduling.pages.release import RELEASE, RELEASES

SOURCES = {
    "base.html": BASE,
    "error.html": ERROR,
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
