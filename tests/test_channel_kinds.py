"""A channel kind is one entry (issue 36): a kind registered by this test alone, a pager,
is offered by the form, keeps its own secret, sends through the outbox like any other kind,
is tried again after a failure, and shows on the notifications page; nothing else in the
plugin names it. (A kind no entry registers is refused before anything is stored:
`test_chat.py`, on both runtimes.)"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from fake_core import Fault
from scheduling.channels import kinds
from scheduling.channels.kinds import ChannelKind, Kept
from scheduling.channels.port import Event, OpenTarget, post_attempt
from scheduling.domain.notifications import AttemptResult
from scheduling.domain.records import ClaimedDelivery, DeliveryTarget
from scheduling.ports import Crypto
from scheduling.services import Services
from tests.support.webhooks import Receiver, with_receivers
from tests.support.world import Browser, World, schedule, tick_at

PAGER_URL = "https://pager.example.net/v1/alerts"
PAGER_LABEL = "Pager alert, for this test only"


def _key_context(installation_id: str, endpoint_id: str) -> str:
    return f"pager-key:{installation_id}:{endpoint_id}"


async def _keep_routing_key(
    crypto: Crypto, installation_id: str, endpoint_id: str, url: str
) -> Kept:
    key = "rk_" + crypto.random_token()[:16]
    return Kept(url, await crypto.seal(key, _key_context(installation_id, endpoint_id)))


class Pager:
    """One POST a delivery, `{"alert": type}`, its routing key in a header."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def open(self, target: DeliveryTarget) -> OpenTarget | None:
        context = _key_context(target.installation_id, target.id)
        key = await self.services.crypto.open(target.secret_sealed, context)
        return OpenTarget(target.id, target.installation_id, target.url, key)

    async def event(self, target: DeliveryTarget, deliveries: Sequence[ClaimedDelivery]) -> Event:
        [delivery] = deliveries
        kind = json.loads(delivery.payload)["type"]
        return Event(delivery.id, json.dumps({"alert": kind}).encode())

    def test_event(self, target: DeliveryTarget, event_id: str, at: int) -> Event:
        return Event(event_id, b'{"alert": "test"}')

    async def deliver(self, target: OpenTarget, event: Event, now_ms: int) -> AttemptResult:
        headers = {"content-type": "application/json", "x-routing-key": target.secret}
        return await post_attempt(self.services.http, target.url, headers, event.body, now_ms)


PAGER = ChannelKind(
    name="pager",
    label=PAGER_LABEL,
    channel=Pager,
    keep=_keep_routing_key,
    url_is_secret=False,
    rotates=True,
    revealed_name="Routing key",
)


@pytest.fixture
def pager() -> Iterator[ChannelKind]:
    with kinds.registered(PAGER) as kind:
        yield kind


async def _add(manage: Browser, installation_id: str, kind: str, url: str) -> Any:
    await manage.get(f"/installations/{installation_id}/notifications")
    fields = [("csrf_token", manage.csrf()), ("opened_for", "manage"), ("kind", kind)]
    fields += [("url", url), ("events", "schedule.refused")]
    return await manage.post_pairs(f"/installations/{installation_id}/notifications", fields)


async def test_a_kind_registered_here_alone_is_offered_sends_retries_and_shows(
    world: World, pager: ChannelKind
) -> None:
    receiver = Receiver(PAGER_URL, clock=world.clock.now_ms)
    with_receivers(world, receiver)
    installation = await world.install()
    manage = await world.browser_for(installation, content_id=None)
    form = (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert 'value="pager"' in form
    assert PAGER_LABEL in form
    added = await _add(manage, installation.id, "pager", PAGER_URL)
    assert added.status == 303, added.body[:500]
    shown_once = (await manage.follow(added)).body.decode()
    assert "Routing key: copy it now." in shown_once  # its own secret, shown once
    key = shown_once.split("data-signing-secret>")[1].split("<")[0]
    assert key.startswith("rk_")

    receiver.answer_next(500)  # the first attempt fails: tried again on the backoff
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    report = await tick_at(world, s["due_at"])
    assert report["delivery_sends"] == 1
    [waiting] = await _deliveries(world)
    assert (waiting["status"], waiting["last_http_status"]) == ("waiting", 500)
    assert waiting["next_attempt_at"] > s["due_at"]  # on the backoff
    await tick_at(world, waiting["next_attempt_at"])
    first, second = receiver.received
    assert json.loads(second.body) == {"alert": "schedule.refused"}
    assert first.body == second.body
    assert second.headers["x-routing-key"] == key
    [done] = await _deliveries(world)
    assert (done["status"], done["attempt_count"]) == ("delivered", 2)

    page = (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert 'data-endpoint-kind="pager"' in page
    assert PAGER_LABEL in page
    assert "data-signing-secret" not in page  # shown that once only
    assert f"/notifications/{done['endpoint_id']}/rotate" in page  # its entry says it rotates
    assert "Delivered" in page


def test_a_kind_is_registered_once() -> None:
    with kinds.registered(PAGER), pytest.raises(ValueError, match="registered already"):
        kinds.register(PAGER)
    assert [k.name for k in kinds.kinds()] == ["webhook", "chat"]


async def _deliveries(world: World) -> list[dict[str, Any]]:
    return (await world.db.prepare("SELECT * FROM webhook_deliveries").all()).results
