"""Where a person can go from an error page: no page is a dead end.

A refused `GET` of a page can be tried again as it was (it changes nothing); a refused form
leads back to the page it came from (posting it again is not safe to offer). Where the
installation is known, the page links back to its Dee Wan: the browser must hold a session
of that installation (live or ended), so an error page never tells a stranger which Dee
Wan an installation id belongs to; a stranger is led to what Scheduling is and how it is
opened instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from scheduling.domain.secrets import ID_PATTERN, has_shape
from scheduling.domain.wording import Refusal
from scheduling.http.requests import Request
from scheduling.http.routing import SESSION_COOKIE, TAB
from scheduling.repository import installations
from scheduling.services import Services, log

# The pages people open from Dee Wan, under an installation id of the right shape.
_INSTALLATION_PAGE = re.compile(rf"^/installations/({ID_PATTERN})(?:/|$)")
# Nothing there to try again: the address itself is wrong.
_NOTHING_TO_REPEAT = ("not_found", "method_not_allowed")


@dataclass(frozen=True)
class NextSteps:
    """Where a refusal's page leads: try again, back, to Dee Wan, or to what Scheduling is."""

    retry_href: str | None = None  # the same page again
    back_href: str | None = None  # the page a refused form came from
    dee_wan_href: str | None = None  # the installation's Dee Wan
    # Without a session: what Scheduling is and how it is opened (never a Dee Wan address).
    about_href: str | None = None
    # A link opened in a browser that never opened Scheduling (a chat message's, a
    # bookmark): the same page works once Scheduling was opened from Dee Wan in it.
    after_launch: bool = False


def local_steps(request: Request, refusal: Refusal) -> NextSteps:
    """What the request itself tells: try a page again, or go back to the page of a form.

    A launch link is never offered again: its code is a secret, which no link carries (when
    Dee Wan did not answer, the page says to open Scheduling from Dee Wan again). A session
    that is gone is not brought back by a reload: the page says so too."""
    found = _INSTALLATION_PAGE.match(request.path)
    if found is None:
        return NextSteps(about_href="/")
    page = f"/installations/{found.group(1)}"
    if request.method not in ("GET", "HEAD"):
        return NextSteps(back_href=page + _tab_of(request))
    url = urlsplit(request.url)
    if "dee_wan_launch=" in url.query or refusal.relaunch or refusal.code in _NOTHING_TO_REPEAT:
        return NextSteps()
    return NextSteps(retry_href=url.path + (f"?{url.query}" if url.query else ""))


async def next_steps(request: Request, services: Services, refusal: Refusal) -> NextSteps:
    """`local_steps`, and the installation's Dee Wan when the browser's session proves it
    was opened from there. A failure to find it leaves the link out, never the page."""
    steps = local_steps(request, refusal)
    found = _INSTALLATION_PAGE.match(request.path)
    if found is None:
        return steps
    try:
        base_url = await _dee_wan_of(request, services, found.group(1))
    except Exception:  # the page is about another failure: say that one
        log.warning("error page: the installation's Dee Wan could not be looked up")
        base_url = None
    if base_url is not None:
        # A launch Dee Wan did not answer, in a browser with a session of the installation:
        # its schedules are on the page that session shows.
        back = steps.back_href
        if back is None and "dee_wan_launch=" in urlsplit(request.url).query:
            back = f"/installations/{found.group(1)}"
        return NextSteps(steps.retry_href, back, base_url)
    # No session of this installation: no Dee Wan to name, so say what Scheduling is; and a
    # browser with no session at all (a chat message's link) may come back here once it
    # opened Scheduling from Dee Wan.
    fresh = (
        refusal.relaunch
        and request.cookie(SESSION_COOKIE) is None
        and request.method in ("GET", "HEAD")
        and "dee_wan_launch=" not in urlsplit(request.url).query
    )
    retry = steps.retry_href or (_same_page(request) if fresh else None)
    return NextSteps(retry, steps.back_href, None, about_href="/", after_launch=fresh)


def _same_page(request: Request) -> str:
    url = urlsplit(request.url)
    return url.path + (f"?{url.query}" if url.query else "")


async def _dee_wan_of(request: Request, services: Services, installation_id: str) -> str | None:
    raw = request.cookie(SESSION_COOKIE)
    if raw is None or not has_shape("session_id", raw):
        return None
    id_hash = await services.crypto.sha256_hex(raw)
    if await installations.installation_of(services.db, id_hash) != installation_id:
        return None
    installation = await installations.get(services.db, installation_id)
    return installation.base_url if installation is not None else None


def _tab_of(request: Request) -> str:
    """`?tab=…` of the launch a refused form came from (nothing for a body past reading)."""
    try:
        tab = request.form().get("tab", "")
    except Refusal:
        return ""
    return f"?tab={tab}" if TAB.fullmatch(tab) else ""
