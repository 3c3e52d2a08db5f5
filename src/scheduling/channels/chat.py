"""The chat channel: a Slack-compatible incoming webhook (`POST {"text": …}`, which Slack,
Google Chat, Mattermost, Rocket.Chat and Discord's `/slack` URL take), one line in plain
words per schedule event, a digest of at most `MAX_LINES` a message.

The URL is the secret: kept sealed, opened only to send. `&`, `<` and `>` are escaped as
Slack asks, so a title can neither mention a channel nor forge a link.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from scheduling.channels.port import Event, OpenTarget, post_attempt
from scheduling.domain.notifications import (
    COMPLETED,
    REFUSED,
    RETRYING,
    STALE,
    AttemptResult,
    Notification,
    ProposalEvent,
    ReleaseEvent,
    page_url,
    read_event,
)
from scheduling.domain.records import ClaimedDelivery, DeliveryTarget
from scheduling.domain.secrets import content_title, open_or_none
from scheduling.domain.times import zoned_clock_text
from scheduling.services import Services

# -- the lines -------------------------------------------------------------------------------------

MAX_LINES = 10
MAX_TITLE_CHARS = 120
_VERBS = {
    REFUSED: {"publish": "Could not publish", "unpublish": "Could not unpublish"},
    COMPLETED: {"publish": "Published", "unpublish": "Unpublished"},
    RETRYING: {"publish": "Will try again to publish", "unpublish": "Will try again to unpublish"},
    STALE: {
        "publish": "Out of date: the schedule to publish",
        "unpublish": "Out of date: the schedule to unpublish",
    },
}
TEST_TEXT = "A test message from Scheduling: this chat will hear of your schedules here."


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# An invisible space after each of these keeps a chat from reading what a stranger wrote as a
# mention (`@here`, `@channel`, `@everyone`, `@all`, a person), a link (`[text](url)`, a
# scheme's `://`), or a name to link (`evil.example`, `www.`).
_MARKUP = re.compile(r"@|\](?=\()|:(?=//)|\.(?=\w)")
_BREAK = "\u200b"


def quoted(text: str) -> str:
    """Dee Wan's or a person's words, safe to put in a chat line (escaped as a whole after)."""
    return _MARKUP.sub(lambda found: found.group() + _BREAK, text)


def event_line(event: Notification, title: str | None) -> str:
    """One schedule's line, from its event: what it was to do, which content (its title as
    scheduled, else its id) and version, when, and why it ended so (a completed one needs no
    reason). A release's line is its name and its own sentence; a proposal's, who proposes."""
    if isinstance(event, ProposalEvent):
        return _proposal_line(event)
    if isinstance(event, ReleaseEvent):  # its sentence names the release too: quoted
        return escape(" ".join(f"Release “{quoted(event.name)}”: {quoted(event.message)}".split()))
    name = " ".join((title or "").split()) or event.content_id
    if len(name) > MAX_TITLE_CHARS:
        name = name[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    kind = event.kind
    verb = _VERBS.get(event.type, _VERBS[REFUSED]).get(kind, f"Could not {kind}")
    when = zoned_clock_text(event.due_at, event.timezone)
    said = f"{verb} “{quoted(name)}” ({quoted(event.version_id)}) at {when}"
    reason = event.message
    said = f"{said}." if event.type == COMPLETED or not reason else f"{said}: {reason}"
    return escape(" ".join(said.split()))


def _proposal_line(event: ProposalEvent) -> str:
    """`Release bot proposes to publish cnt_en at 09:00 CEST, for Ada: confirm or decline it on
    the Scheduling page.` (no title: a proposal has read nothing from Dee Wan)."""
    when = zoned_clock_text(event.due_at, event.timezone)
    said = (
        f"{quoted(event.proposed_by)} proposes to {event.kind} {quoted(event.content_id)}"
        f" at {when}, for {quoted(event.for_person)}: confirm or decline it on the Scheduling"
        " page."
    )
    return escape(" ".join(said.split()))


def digest(lines: Sequence[str], more: int, page_url: str) -> bytes:
    """One message: its lines (at most `MAX_LINES`), then how many more, then the page."""
    shown = [f"• {line}" for line in lines[:MAX_LINES]]
    more += len(lines) - len(shown)
    tail = f"and {more} more: {page_url}" if more else f"See them: {page_url}"
    return _body("\n".join([*shown, tail]))


def test_message(page_url: str) -> bytes:
    return _body(f"{TEST_TEXT}\n{page_url}")


def _body(text: str) -> bytes:
    return json.dumps({"text": text}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# -- the channel -----------------------------------------------------------------------------------

HEADERS = {"content-type": "application/json"}


class SlackChat:
    def __init__(self, services: Services) -> None:
        self.services = services  # its HTTP client and crypto are read when used
        self.public_origin = services.config.public_origin

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        """None, logged (by its endpoint's id only), when TOKEN_KEY cannot open its URL."""
        context = url_context(target.installation_id, target.id)
        what = f"endpoint {target.id}: chat URL"
        url = await open_or_none(self.services.crypto, target.secret_sealed, context, what)
        return None if url is None else OpenTarget(target.id, target.installation_id, url, "")

    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        """The digest of `deliveries`, oldest first: a line for each of the first
        `MAX_LINES` (its content's title opened), and how many more."""
        lines = [
            event_line(read_event(d.payload), await self._title(d)) for d in deliveries[:MAX_LINES]
        ]
        more = len(deliveries) - len(lines)
        return Event(deliveries[0].id, digest(lines, more, self._page(target)))

    async def _title(self, delivery: ClaimedDelivery) -> str | None:
        """The title its schedule keeps sealed; None (its id is used) when there is none or
        TOKEN_KEY cannot open it."""
        if delivery.title_sealed is None:
            return None
        context = content_title(delivery.installation_id, delivery.schedule_id)
        what = f"schedule {delivery.schedule_id}: title"
        return await open_or_none(self.services.crypto, delivery.title_sealed, context, what)

    def test_event(self, target: DeliveryTarget, event_id: str, at: int) -> Event:
        return Event(event_id, test_message(self._page(target)))

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        return await post_attempt(self.services.http, target.url, HEADERS, event.body, now_ms)

    def _page(self, target: DeliveryTarget) -> str:
        return page_url(self.public_origin, target.installation_id)


def url_context(installation_id: str, endpoint_id: str) -> str:
    """What a sealed chat URL is bound to: its installation and endpoint."""
    return f"chat-url:{installation_id}:{endpoint_id}"


def shown_url(url: str) -> str:
    """What a page shows of a chat URL once it is stored: its host and its last 4 characters."""
    rest = url.partition("://")[2]
    host = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return f"{host} …{url[-4:]}"
