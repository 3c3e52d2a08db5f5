"""The install and rotate story of docs/admins/index.md end to end (with a notification
endpoint whose secret is rotated), then a byte scan for raw secrets: tokens, codes,
delegations, webhook secrets."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fake_core.install import InstallError
from scheduling.ports import OutboundRequest
from scheduling.runtimes.cpython.migrations import apply_migrations
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import mint
from tests.support.app import ORIGIN, FakeClock
from tests.support.webhooks import (
    CHAT_URL,
    Receiver,
    add_chat_endpoint,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import World

RAW_SECRET = re.compile(rb"dw[apdl]_[A-Za-z0-9_-]{20,}|whsec_[A-Za-z0-9+/=]{20,}")


async def core_answers(world: World, token: str) -> int:
    """What core says to a call made with `token` (a content read needs only the token to fail)."""
    response = await world.app.services.http.send(
        OutboundRequest(
            "POST",
            f"{world.core.base_url}/api/plugins/v1/launch/exchange",
            {"authorization": f"Bearer {token}", "content-type": "application/json"},
            b'{"code":"dwl_x"}',
        )
    )
    return response.status


async def schedule_soon(world: World, installation_id: str, content_id: str) -> int:
    """Create a schedule through the page, due in five minutes; returns its due instant."""
    browser = await world.browser_for(
        world.core.state.installations[installation_id], content_id=content_id
    )
    await browser.get(f"/installations/{installation_id}")
    due = (world.clock.now // 60_000 + 5) * 60_000
    local = datetime.fromtimestamp(due / 1000, UTC).strftime("%Y-%m-%dT%H:%M")
    response = await browser.post(
        f"/installations/{installation_id}/schedules",
        {
            "csrf_token": browser.csrf(),
            **browser.shown(),
            "transition": "publish:published",
            "local_time": local,
            "timezone": "UTC",
        },
    )
    assert response.status == 303, response.body[:300]
    return due


async def run_at(world: World, due: int, content_id: str) -> dict[str, object]:
    world.clock.now = due
    await world.app.tick(due)
    row = (
        await world.db.prepare(
            "SELECT status, result_code FROM schedules WHERE content_id = ?"
            " ORDER BY created_at DESC LIMIT 1"
        )
        .bind(content_id)
        .first()
    )
    assert row is not None
    return row


@pytest.fixture
def file_db(tmp_path: Path) -> SqliteDatabase:
    database = SqliteDatabase(tmp_path / "plugin.sqlite3")
    apply_migrations(database.connection)
    return database


async def test_mint_install_rotate_uninstall_and_no_raw_secret_anywhere(
    file_db: SqliteDatabase, clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    world = World(file_db, clock)
    receiver = Receiver()
    chat = Receiver(CHAT_URL)
    with_receivers(world, receiver, chat)
    seen: list[str] = []

    # Install: the core fetches the manifest, takes the code, activates with a fresh token.
    installation = await world.install()
    first_token = installation.token
    seen.append(first_token)
    assert installation.id in world.core.state.installations

    # Notifications: an endpoint's secret is shown once, then rotated (shown once again).
    manage = await world.browser_for(installation, content_id=None)
    webhook_secret = await add_endpoint(manage, installation.id)
    seen.append(webhook_secret)
    later_pages = [(await manage.get(f"/installations/{installation.id}")).body]
    endpoint_id = re.findall(rb'data-endpoint-id="([^"]+)"', later_pages[0])[0].decode()
    rotated_page = await manage.follow(
        await manage.post(
            f"/installations/{installation.id}/notifications/{endpoint_id}/rotate",
            {"csrf_token": manage.csrf(), "opened_for": "manage"},
        )
    )
    webhook_secret = re.findall(r"data-webhook-secret>([^<]+)<", rotated_page.body.decode())[0]
    seen.append(webhook_secret)
    # A chat endpoint: its URL is its secret, shown once too.
    await add_chat_endpoint(manage, installation.id, CHAT_URL)
    seen.append(CHAT_URL.split("/services/")[1])

    # Use it: a launch (delegation sealed into a session) and a schedule sent with the token.
    due = await schedule_soon(world, installation.id, "cnt_en")
    assert (await run_at(world, due, "cnt_en"))["status"] == "completed"

    # Rotate: a rotation code for this installation only; the core sends a new token.
    rotation_code = await mint(world.app, installation.id)
    seen.append(rotation_code)
    rotated = await world.core.rotate(installation.id, rotation_code)
    assert rotated.token != first_token
    seen.append(rotated.token)
    assert await core_answers(world, first_token) == 401  # the old token is refused by core
    due = await schedule_soon(world, installation.id, "cnt_page")
    assert (await run_at(world, due, "cnt_page"))["status"] == "completed"  # the new one works
    assert (
        world.core.calls.of("transitions")[-1].header("Authorization") == f"Bearer {rotated.token}"
    )

    # A rotation code is single use and bound to its installation.
    with pytest.raises(InstallError):
        await world.core.rotate(installation.id, rotation_code)

    # Uninstall: core revokes the token; the plugin learns it from core's answers.
    world.core.state.add_content("cnt_late", "Later")
    due = await schedule_soon(world, installation.id, "cnt_late")
    open_page = await world.browser_for(installation)
    world.core.uninstall(installation.id)
    result = await run_at(world, due, "cnt_late")
    assert result == {"status": "refused", "result_code": "plugin_unauthorized"}
    [told] = receiver.deliveries  # the refusal was told, signed with the rotated secret
    assert signed_by(webhook_secret, told)
    [said] = chat.texts()  # and said in the chat, in words
    assert said.startswith("• Could not publish “Later”")
    later_pages.append((await manage.get(f"/installations/{installation.id}")).body)
    page = await open_page.get(f"/installations/{installation.id}")
    assert page.status == 401
    assert 'data-error-code="plugin_unauthorized"' in page.body.decode()

    # Every raw secret the flows used, and any value of their shapes, is absent from the
    # database file (and its WAL) and from every log line.
    for call in world.core.calls.calls:
        if call.endpoint == "exchange" and isinstance(call.body, dict):
            seen.append(str(call.body.get("code")))
    seen.extend(world.core.state.delegations)  # every delegation token core issued
    assert world.core.state.delegations
    file_db.connection.execute("PRAGMA wal_checkpoint(FULL)")
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("plugin.sqlite3*"))
    assert len(stored) > 10_000
    assert RAW_SECRET.findall(stored) == []
    logs = caplog.text.encode()
    assert "activated" in caplog.text  # the log is being captured
    assert RAW_SECRET.findall(logs) == []
    for secret in seen:
        for form in (secret, secret.removeprefix("whsec_")):
            assert form.encode() not in stored
            assert form.encode() not in logs
    # Nor in a page after the one that showed it, nor in what was sent to the endpoint.
    sent = b"".join(
        d.body + repr(d.headers).encode() for d in (*receiver.deliveries, *chat.deliveries)
    )
    for shown_after in (*later_pages, sent):
        assert RAW_SECRET.findall(shown_after) == []
        for secret in seen:
            assert secret.encode() not in shown_after
            assert secret.removeprefix("whsec_").encode() not in shown_after
    # The sealed token really is in the file, under its own name.
    assert b"v1." in stored


async def test_install_refused_by_the_plugin_is_not_kept_by_core(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """An activation the plugin refuses (here: a used code) is not kept by core."""
    world = World(db, clock)
    code = await mint(world.app)
    await world.core.install(ORIGIN, code)
    with pytest.raises(InstallError) as refused:
        await world.core.install(ORIGIN, code)
    assert refused.value.code == "invalid_code"
    assert len(world.core.state.installations) == 1
