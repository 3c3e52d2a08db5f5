"""Each kind of endpoint with its channel: `webhook` (a signed Standard Webhook, the default)
and `chat` (a Slack-compatible incoming webhook)."""

from __future__ import annotations

from scheduling.channels.chat import SlackChat
from scheduling.channels.port import Channel
from scheduling.channels.webhook import StandardWebhook
from scheduling.domain.notifications import CHAT, WEBHOOK
from scheduling.services import Services


def channels(services: Services) -> dict[str, Channel]:
    """One channel of each kind, for one invocation or request."""
    return {WEBHOOK: StandardWebhook(services), CHAT: SlackChat(services)}
