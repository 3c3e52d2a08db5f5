"""`GET …/releases` (any launch of the installation): the installation's releases, several
pinned changes sent in order at one time. None can be made yet: the page says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.access import open_access
from scheduling.http.guards import require_session
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.services import Services

RELEASES = """{% extends "base.html" %}
{% block main %}
<h1>Releases</h1>
<p>A release is several pinned changes sent in order at one time.</p>
<p class="empty" data-releases-empty>This installation has no releases.</p>
{% endblock %}
"""


@dataclass(frozen=True)
class ReleasesPage:
    template: ClassVar[str] = "releases.html"

    title: str
    person_name: str
    rooms: tuple[Room, ...]
    dee_wan_href: str


async def releases(request: Request, services: Services) -> Response:
    session = await require_session(request, services)
    access = await open_access(services, session)
    model = ReleasesPage(
        "Releases", session.person_name, rooms(session, "releases"), access.installation.base_url
    )
    return page(model)
