"""The receiver beside the fake Dee Wan: it verifies what the plugin signs, as the official
library would, lists every delivery on the home page, and accepts nothing it cannot verify."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook

from fake_core import FakeCore, Installation
from fake_core.app import FakeCoreApp
from fake_core.saved_state import state_from_json, state_to_json
from fake_core.transport import answered
from fake_core.webhooks import check
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.webhooks import add_chat_endpoint, add_endpoint
from tests.support.world import Browser, World, schedule, tick_at

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NOW_MS = 1_782_900_000_000


def signed(secret: str, body: str, at_ms: int = NOW_MS) -> dict[str, str]:
    when = datetime.fromtimestamp(at_ms // 1000, UTC)
    return {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(at_ms // 1000),
        "webhook-signature": Webhook(secret).sign("msg_1", when, body),
    }


async def posting_to_the_fake_core(
    db: SqliteDatabase, clock: FakeClock
) -> tuple[World, FakeCoreApp, Installation, Browser]:
    """The plugin installed in development, what it posts to the fake core's receiver or chat
    reaching them; a site admin's Manage browser."""
    env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS="https://cms.example")
    world = World(db, clock, env=env)
    core_app, core = FakeCoreApp(world.core), world.http.handler

    async def to_fake_core(request: OutboundRequest) -> OutboundResponse:
        """What the plugin posts to the receiver (`/webhooks`) or chat (`/chat/…`) reaches
        those server routes; the rest the protocol's."""
        path = request.url.removeprefix(world.core.base_url)
        if path != request.url and (path == "/webhooks" or path.startswith("/chat/")):
            reply = await core_app.dispatch(
                "POST", path, dict(request.headers), request.body or b""
            )
            return OutboundResponse(reply.status, dict(reply.headers), reply.body)
        return await answered(core, request)

    world.http.handler = to_fake_core
    installation = await world.install()
    return world, core_app, installation, await world.browser_for(installation, content_id=None)


@pytest.mark.parametrize(
    ("secrets", "body", "at_ms", "finding"),
    [
        ([SECRET], '{"a":1}', NOW_MS, None),
        (["whsec_" + "A" * 32, SECRET], '{"a":1}', NOW_MS, None),
        ([], '{"a":1}', NOW_MS, "no signing secret pasted yet"),
        (["whsec_" + "A" * 32], '{"a":1}', NOW_MS, "signature does not match a pasted secret"),
        ([SECRET], '{"a":1}', NOW_MS - 301_000, "webhook-timestamp is more than five minutes off"),
    ],
)
def test_it_checks_what_the_official_library_signs(
    secrets: list[str], body: str, at_ms: int, finding: str | None
) -> None:
    headers = signed(SECRET, body, at_ms)
    found = check(
        secrets,
        headers["webhook-id"],
        headers["webhook-timestamp"],
        headers["webhook-signature"],
        body.encode(),
        NOW_MS,
    )
    assert found == finding
    tampered = check(
        secrets,
        headers["webhook-id"],
        headers["webhook-timestamp"],
        headers["webhook-signature"],
        b'{"a":2}',
        NOW_MS,
    )
    assert tampered is not None


async def test_a_delivery_from_the_plugin_is_verified_once_its_secret_is_pasted(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    world, core_app, installation, manage = await posting_to_the_fake_core(db, clock)
    secret = await add_endpoint(manage, installation.id, f"{world.core.base_url}/webhooks")
    s = await schedule(world, installation)
    world.core.state.edit("cnt_en")  # it will be refused as stale
    report = await tick_at(world, s["due_at"])
    assert report["deliveries_retrying"] == 1  # no secret pasted: 401, tried again
    [first] = world.core.state.webhooks
    assert (first.verified, first.finding) == (False, "no signing secret pasted yet")

    pasted = await core_app.dispatch(
        "POST",
        "/ui/webhook-secret",
        {},
        f"secret={secret.replace('+', '%2B').replace('/', '%2F').replace('=', '%3D')}".encode(),
    )
    assert pasted.status == 303
    retry = (await db.prepare("SELECT next_attempt_at FROM webhook_deliveries").first()) or {}
    report = await tick_at(world, retry["next_attempt_at"])
    assert report["deliveries_delivered"] == 1
    second = world.core.state.webhooks[-1]
    assert second.verified
    assert second.webhook_id == first.webhook_id
    assert second.event_type == "schedule.refused"
    assert "scheduled_target_stale" in second.summary

    home = (await core_app.dispatch("GET", "/", {}, b"")).body.decode()
    assert home.count('data-verified="true"') == 1
    assert home.count('data-verified="false"') == 1
    assert secret not in home  # kept, never shown
    assert secret.removeprefix("whsec_") not in home
    # Kept with the state file, as the log of transitions is.
    again = state_from_json(state_to_json(world.core.state))
    assert again.webhook_secrets == [secret]
    assert [w.verified for w in again.webhooks] == [False, True]


async def test_a_pasted_value_that_is_no_secret_is_not_kept() -> None:
    core = FakeCore("https://cms.example")
    app = FakeCoreApp(core)
    answer = await app.dispatch("POST", "/ui/webhook-secret", {}, b"secret=hunter2")
    assert answer.status == 303
    assert core.state.webhook_secrets == []
    home = (await app.dispatch("GET", "/", {}, b"")).body.decode()
    assert "Not kept: a signing secret starts with whsec_." in home


async def test_the_chat_beside_it_shows_the_plugins_messages_as_a_chat_would(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """A chat endpoint on the fake core's `/chat/…`: the plugin's digest arrives, answered
    `200 ok` as Slack answers, and the home page shows it: who, when, its lines, its link."""
    world, core_app, installation, manage = await posting_to_the_fake_core(db, clock)
    await add_chat_endpoint(manage, installation.id, f"{world.core.base_url}/chat/editors")
    s = await schedule(world, installation)
    world.core.state.edit("cnt_en")  # it will be refused as stale
    report = await tick_at(world, s["due_at"])
    assert report["deliveries_delivered"] == 1
    [message] = world.core.state.chat_messages
    assert message.channel == "editors"
    home = (await core_app.dispatch("GET", "/", {}, b"")).body.decode()
    assert home.count('class="chat-message"') == 1
    assert "<strong>Scheduling</strong>" in home
    assert "• Could not publish “Spring launch”" in home
    page = f"https://scheduling.example/installations/{installation.id}"
    assert f'<a href="{page}">{page}</a>' in home
    for bad, answer in ((b"[]", b"invalid_payload"), (b'{"text": " "}', b"no_text")):
        refused = await core_app.dispatch("POST", "/chat/editors", {}, bad)
        assert (refused.status, refused.body) == (400, answer)
    again = state_from_json(state_to_json(world.core.state))
    assert again.chat_messages == world.core.state.chat_messages
