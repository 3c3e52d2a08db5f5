"""`GET …/releases` (any launch of the installation): the installation's releases, several
pinned changes sent in order at one time; held ones first, then the waiting ones by their
time, then the ended ones, newest first. Each links to its page within the launch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from scheduling.actions.access import open_access
from scheduling.domain.localtime import rfc3339
from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import counted
from scheduling.http.guards import require_session
from scheduling.http.html.render import Room, page, rooms
from scheduling.http.requests import Request
from scheduling.http.responses import Response
from scheduling.pages.release_page import STATUS_WORDS
from scheduling.repository import releases as stored
from scheduling.services import Services


@dataclass(frozen=True)
class ReleaseEntry:
    """One release as the room lists it."""

    id: str
    name: str
    status: str
    status_label: str
    when: str
    when_iso: str
    items: str  # "3 items"
    href: str


@dataclass(frozen=True)
class ReleasesPage:
    template: ClassVar[str] = "releases.html"

    title: str
    person_name: str
    rooms: tuple[Room, ...]
    dee_wan_href: str
    releases: tuple[ReleaseEntry, ...]


async def releases(request: Request, services: Services) -> Response:
    session = await require_session(request, services)
    access = await open_access(services, session)
    now = services.clock.now_ms()
    lines = tuple(
        ReleaseEntry(
            r.id, r.name, r.shown(now), STATUS_WORDS[r.shown(now)],
            instant_text(r.due_at, r.timezone), rfc3339(r.due_at), counted(r.items, "item"),
            session.href(f"/releases/{r.id}"),
        )
        for r in await stored.of_installation(services.db, session.installation_id)
    )  # fmt: skip
    model = ReleasesPage(
        "Releases", session.person_name, rooms(session, "releases"),
        access.installation.base_url, lines,
    )  # fmt: skip
    return page(model)
