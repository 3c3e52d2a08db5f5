"""Webhook receivers for the tests, and the official `standardwebhooks` library's check of what
the plugin signed.

`Receiver` is an endpoint in-process, a handler of the outbound port: it answers what the test
scripts (a status, a timeout, a dropped connection) and records every delivery.
`with_receivers` puts receivers beside the fake Dee Wan. On a real socket, for the local
runtime and the Worker under Pyodide: `tests/support/loopback_core.py`'s `loopback_receiver`.
"""

from __future__ import annotations

import hmac
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from standardwebhooks.webhooks import Webhook

from fake_core import Fault
from fake_core.transport import MockTransport, answered
from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout
from tests.support.loopback_core import Received
from tests.support.world import Browser, World

HOOK_URL = "https://hooks.example/scheduling"
# A chat's incoming-webhook URL: the part after /services/ is its secret.
CHAT_URL = "https://chat.example.com/services/T0A1B2C3/B4D5E6F7/k3y0nly1n7h3urlZq9X"
SECRET_VALUE = re.compile(r"data-signing-secret>(whsec_[A-Za-z0-9+/=]+)<")
ANY_SECRET = re.compile(rb"whsec_[A-Za-z0-9+/=]{20,}")


def signed_by(secret: str, received: Received) -> bool:
    """The library's own signature of this id, timestamp and body is among those sent (the
    check `Webhook.verify` makes, without its five-minute window: test clocks are fake)."""
    headers = received.headers
    timestamp = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    expected = Webhook(secret).sign(headers["webhook-id"], timestamp, received.body.decode())
    sent = headers["webhook-signature"].split(" ")
    return any(hmac.compare_digest(expected, signature) for signature in sent)


def verify(secret: str, received: Received) -> Any:
    """`Webhook.verify` itself, window included: for deliveries made on the real clock."""
    return Webhook(secret).verify(received.body, received.headers)


Answer = int | str | tuple[int, dict[str, str]]  # a status (with headers), or "timeout" / "drop"


@dataclass
class Receiver:
    url: str = HOOK_URL
    default: Answer = 204
    answers: list[Answer] = field(default_factory=list)  # consumed first, in order
    received: list[Received] = field(default_factory=list)
    clock: Callable[[], int] | None = None  # stamps each delivery's `at` (ms), when given

    def answer_next(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def __call__(self, request: OutboundRequest) -> OutboundResponse:
        assert request.body is not None
        at = float(self.clock()) if self.clock else 0.0
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(Received(request.url, headers, request.body, at))
        answer = self.answers.pop(0) if self.answers else self.default
        if answer == "timeout":
            raise TransportTimeout("the receiver did not answer")
        if answer == "drop":
            raise TransportError("connection reset")
        status, extra = answer if isinstance(answer, tuple) else (answer, {})
        assert isinstance(status, int)
        return OutboundResponse(status, {"content-type": "text/plain", **extra}, b"ok")

    def texts(self) -> list[str]:
        """What a chat endpoint was sent: each message's text."""
        return [str(json.loads(d.body)["text"]) for d in self.received]


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def with_receivers(world: World, *receivers: Receiver) -> MockTransport:
    """The world's outbound port, each receiver at its origin, the rest as before."""
    before = world.http.handler

    async def network(request: OutboundRequest) -> OutboundResponse:
        for receiver in receivers:
            if _origin(receiver.url) == _origin(request.url):
                return receiver(request)
        return await answered(before, request)

    world.http.handler = network
    return world.http


async def add_endpoint(
    browser: Browser,
    installation_id: str,
    url: str = HOOK_URL,
    events: tuple[str, ...] = ("schedule.refused",),
) -> str:
    """Add an endpoint through the notifications page's form; returns its secret, shown once."""
    await browser.get(f"/installations/{installation_id}/notifications")
    fields = [("csrf_token", browser.csrf()), ("opened_for", "manage"), ("url", url)]
    fields += [("events", event) for event in events]
    response = await browser.post_pairs(f"/installations/{installation_id}/notifications", fields)
    assert response.status == 303, response.body[:500]
    page = await browser.follow(response)
    found = SECRET_VALUE.search(page.body.decode())
    assert found, "no secret shown after creation"
    return found.group(1)


# Every answer of Dee Wan's that ends a schedule refused, and the code it ends with.
DEE_WAN_REFUSALS = [
    (Fault.respond(400, "invalid_request"), "invalid_request"),
    (Fault.respond(401, "plugin_unauthorized"), "plugin_unauthorized"),
    (Fault.respond(403, "capability_refused"), "capability_refused"),
    (Fault.respond(403, "requester_unauthorized"), "requester_unauthorized"),
    (Fault.respond(404, "content_not_found"), "content_not_found"),
    (Fault.respond(409, "scheduled_target_stale"), "scheduled_target_stale"),
    (Fault.respond(409, "idempotency_key_reused"), "idempotency_key_reused"),
    (Fault.respond(422, "transition_refused"), "transition_refused"),
    (Fault.bad_json(200), "untrusted_response"),
    (Fault.redirect(302), "untrusted_response"),
    (Fault.respond(429, "slow_down", retry_after="301"), "retry_exhausted"),  # past the cap
]


CHAT_URL_VALUE = re.compile(r"data-secret-url>([^<]+)<")


async def add_chat_endpoint(
    browser: Browser,
    installation_id: str,
    url: str,
    events: tuple[str, ...] = ("schedule.refused",),
) -> str:
    """Add a chat endpoint through the notifications page's form; returns the page that showed
    its URL, once."""
    await browser.get(f"/installations/{installation_id}/notifications")
    fields = [("csrf_token", browser.csrf()), ("opened_for", "manage"), ("kind", "chat")]
    fields += [("url", url), *(("events", event) for event in events)]
    response = await browser.post_pairs(f"/installations/{installation_id}/notifications", fields)
    assert response.status == 303, response.body[:500]
    page = (await browser.follow(response)).body.decode()
    found = CHAT_URL_VALUE.search(page)
    assert found, "the chat URL was not shown once"
    assert html.unescape(found.group(1)) == url
    return page


def form_body(fields: list[tuple[str, str]]) -> bytes:
    return urlencode(fields).encode()
