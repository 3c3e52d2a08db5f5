"""A chat beside the fake Dee Wan, for the plugin's chat endpoints in development.

`POST /chat/<anything>` is a Slack-compatible incoming webhook: it takes `{"text": "…"}` and
answers `200 ok`, as Slack does (`400 invalid_payload` for a body that is no such object,
`400 no_text` for an empty text). The home page shows each message as a chat would: who
sent it, when, its lines with their bullets, and its links clickable (`&lt;`, `&gt;` and
`&amp;` read back as the characters Slack shows). The last `KEPT` are kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from fake_core.clock import readable
from fake_core.context import Context
from fake_core.routing import Request
from fake_core.state import ReceivedChat
from fake_core.wire import Reply

KEPT = 50
MAX_TEXT = 40_000  # Slack truncates a message's text past this
_LINK = re.compile(r"(https?://[^\s<>\"]+)")
PLAIN = {"content-type": "text/plain; charset=utf-8"}


async def receive(ctx: Context, request: Request) -> Reply:
    if request.method != "POST":
        return Reply(405, {**PLAIN, "allow": "POST"}, b"method_not_allowed")
    try:
        message = json.loads(request.body)
    except ValueError:
        return Reply(400, PLAIN, b"invalid_payload")
    text = message.get("text") if isinstance(message, dict) else None
    if not isinstance(text, str):
        return Reply(400, PLAIN, b"invalid_payload")
    if not text.strip():
        return Reply(400, PLAIN, b"no_text")
    channel = request.path.removeprefix("/chat/")[:40] or "general"
    messages = ctx.core.state.chat_messages
    messages.append(ReceivedChat(ctx.core.clock(), channel, text[:MAX_TEXT]))
    del messages[:-KEPT]
    return Reply(200, PLAIN, b"ok")


@dataclass(frozen=True)
class Shown:
    """A message as the home page shows it: each line a list of (text, is a link) pieces."""

    when: str
    channel: str
    lines: list[list[tuple[str, bool]]]


def shown(message: ReceivedChat) -> Shown:
    lines = []
    for line in message.text.split("\n"):
        read = line.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        pieces = [(piece, bool(_LINK.fullmatch(piece))) for piece in _LINK.split(read) if piece]
        lines.append(pieces)
    return Shown(readable(message.at_ms), message.channel, lines)
