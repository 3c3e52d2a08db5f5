"""What a chat endpoint is told: one line in plain words per schedule event, and a digest of
at most `MAX_LINES` of them a message, with how many more and where to see them.

    • Could not publish “Summer news” (ver_2) at 09:00 CET: Dee Wan refused this change.
    • Published “Autumn menu” (ver_7) at 09:00 CET.
    and 3 more: https://scheduling.example/installations/ins_…

The text is Slack's incoming-webhook `{"text": …}`, which Slack, Google Chat, Mattermost,
Rocket.Chat and Discord's Slack-compatible URL all take: `&`, `<` and `>` are escaped as
Slack asks, and what Dee Wan or a person named (a title, an id, a name) is kept from reading
as markup in any of them (`quoted`), so it can neither mention anyone nor become a link.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from scheduling.domain.notification_events import (
    COMPLETED,
    REFUSED,
    RETRYING,
    STALE,
    Notification,
    ProposalEvent,
    ReleaseEvent,
)
from scheduling.domain.time_words import zoned_clock_text

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
