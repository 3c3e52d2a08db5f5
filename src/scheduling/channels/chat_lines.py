"""What a chat endpoint is told: one line in plain words per schedule event, and a digest of
at most `MAX_LINES` of them a message, with how many more and where to see them.

    • Could not publish “Summer news” (ver_2) at 09:00 CET: Dee Wan refused this change.
    • Published “Autumn menu” (ver_7) at 09:00 CET.
    and 3 more: https://scheduling.example/installations/ins_…

The text is Slack's incoming-webhook `{"text": …}`, which Slack, Google Chat, Mattermost,
Rocket.Chat and Discord's Slack-compatible URL all take: `&`, `<` and `>` are escaped as
Slack asks, so a title can neither mention a channel nor forge a link.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from scheduling.domain.notification_events import (
    COMPLETED,
    PROPOSAL_CREATED,
    REFUSED,
    RELEASE_COMPLETED,
    RELEASE_HELD,
    RETRYING,
    STALE,
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


def event_line(body: bytes, title: str | None) -> str:
    """One schedule's line, from its event's JSON (`ScheduleEvent.body`): what it was to do,
    which content (its title as scheduled, else its id) and version, when, and why it ended
    so (a completed one needs no reason)."""
    event = json.loads(body)
    data = event["data"]
    if event["type"] == PROPOSAL_CREATED:
        return _proposal_line(data)
    if event["type"] in (RELEASE_HELD, RELEASE_COMPLETED):  # its name, and its own sentence
        return escape(" ".join(f"Release “{data['name']}”: {data['message']}".split()))
    name = (title or "").strip() or str(data["content_id"])
    if len(name) > MAX_TITLE_CHARS:
        name = name[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    kind = str(data["kind"])
    verb = _VERBS.get(event["type"], _VERBS[REFUSED]).get(kind, f"Could not {kind}")
    due_at = int(datetime.fromisoformat(data["due_at"]).timestamp() * 1000)
    when = zoned_clock_text(due_at, str(data["timezone"]))
    said = f"{verb} “{name}” ({data['version_id']}) at {when}"
    reason = str(data.get("message") or "")
    said = f"{said}." if event["type"] == COMPLETED or not reason else f"{said}: {reason}"
    return escape(" ".join(said.split()))


def _proposal_line(data: dict[str, object]) -> str:
    """`Release bot proposes to publish cnt_en at 09:00 CEST, for Ada: confirm or decline it on
    the Scheduling page.` (no title: a proposal has read nothing from Dee Wan)."""
    due_at = int(datetime.fromisoformat(str(data["due_at"])).timestamp() * 1000)
    when = zoned_clock_text(due_at, str(data["timezone"]))
    said = (
        f"{data['proposed_by']} proposes to {data['kind']} {data['content_id']} at {when},"
        f" for {data['for']}: confirm or decline it on the Scheduling page."
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
