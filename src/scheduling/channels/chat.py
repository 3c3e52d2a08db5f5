"""The chat channel: a Slack-compatible incoming webhook (`POST {"text": …}`), which Slack,
Google Chat, Mattermost, Rocket.Chat and Discord's `/slack` URL take. The URL is the secret:
it is kept sealed and opened only to send. A chat endpoint's due deliveries make one message
(`chat_lines.digest`), at most one a minute (its entry in `kinds.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduling.channels import chat_lines, http_post
from scheduling.channels.port import Event, OpenTarget
from scheduling.domain import associated_data, sealing
from scheduling.domain.deliveries import ClaimedDelivery, DeliveryTarget
from scheduling.domain.delivery_policy import AttemptResult
from scheduling.domain.notification_events import page_url, read_event
from scheduling.ports import Crypto
from scheduling.services import Services

HEADERS = {"content-type": "application/json"}


class SlackChat:
    def __init__(self, services: Services) -> None:
        self.services = services  # its HTTP client and crypto are read when used
        self.public_origin = services.config.public_origin

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        url = await open_url(
            self.services.crypto, target.installation_id, target.id, target.secret_sealed
        )
        return None if url is None else OpenTarget(target.id, target.installation_id, url, "")

    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        """The digest of `deliveries`, oldest first: a line for each of the first
        `chat_lines.MAX_LINES` (its content's title opened), and how many more."""
        lines = [
            chat_lines.event_line(read_event(d.payload), await self._title(d))
            for d in deliveries[: chat_lines.MAX_LINES]
        ]
        more = len(deliveries) - len(lines)
        return Event(deliveries[0].id, chat_lines.digest(lines, more, self._page(target)))

    async def _title(self, delivery: ClaimedDelivery) -> str | None:
        """The title its schedule keeps sealed; None (its id is used) when there is none or
        TOKEN_KEY cannot open it."""
        if delivery.title_sealed is None:
            return None
        context = associated_data.content_title(delivery.installation_id, delivery.schedule_id)
        what = f"schedule {delivery.schedule_id}: title"
        return await sealing.open_or_none(
            self.services.crypto, delivery.title_sealed, context, what
        )

    def test_event(self, target: DeliveryTarget, event_id: str, at: int) -> Event:
        return Event(event_id, chat_lines.test_message(self._page(target)))

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        return await http_post.post(self.services.http, target.url, HEADERS, event.body, now_ms)

    def _page(self, target: DeliveryTarget) -> str:
        return page_url(self.public_origin, target.installation_id)


def url_context(installation_id: str, endpoint_id: str) -> str:
    """What a sealed chat URL is bound to: its installation and endpoint."""
    return f"chat-url:{installation_id}:{endpoint_id}"


async def seal_url(crypto: Crypto, installation_id: str, endpoint_id: str, url: str) -> str:
    return await crypto.seal(url, url_context(installation_id, endpoint_id))


async def open_url(
    crypto: Crypto, installation_id: str, endpoint_id: str, sealed: str
) -> str | None:
    """The chat URL; None, logged (by its endpoint's id only), when TOKEN_KEY cannot open it."""
    context = url_context(installation_id, endpoint_id)
    return await sealing.open_or_none(crypto, sealed, context, f"endpoint {endpoint_id}: chat URL")


def shown_url(url: str) -> str:
    """What a page shows of a chat URL once it is stored: its host and its last 4 characters."""
    rest = url.partition("://")[2]
    host = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return f"{host} …{url[-4:]}"
