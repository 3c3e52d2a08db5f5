"""The install and rotate story of docs/admins/index.md end to end (with a notification
endpoint whose secret is rotated), then a byte scan for raw secrets: tokens, codes,
delegations, webhook secrets."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from fake_core.install import InstallError
from fake_core.state import Installation
from scheduling.ports import OutboundRequest
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.activation import mint
from tests.support.app import ORIGIN, FakeClock
from tests.support.runtimes import Runtime
from tests.support.webhooks import (
    CHAT_URL,
    Receiver,
    add_chat_endpoint,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import Browser, World, schedules_on

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
    fields = {"transition": "publish:published", "local_time": local, "timezone": "UTC"}
    form = {"csrf_token": browser.csrf(), **browser.shown(), **fields}
    response = await browser.post(f"/installations/{installation_id}/schedules", form)
    assert response.status == 303, response.body[:300]
    return due


async def run_at(world: World, due: int, content_id: str) -> dict[str, object]:
    world.clock.now = due
    await world.app.tick(due)
    latest = "SELECT status, result_code FROM schedules WHERE content_id = ?"
    latest += " ORDER BY created_at DESC LIMIT 1"
    row = await world.db.prepare(latest).bind(content_id).first()
    assert row is not None
    return row


async def add_endpoints(
    world: World, installation: Installation, seen: list[str]
) -> tuple[Browser, str, list[bytes]]:
    """Notifications: an endpoint's secret is shown once, then rotated (shown once again); a
    chat endpoint's URL is its secret, shown once too. The manage browser, the webhook's
    secret now, and the page shown after the first."""
    manage = await world.browser_for(installation, content_id=None)
    webhook_secret = await add_endpoint(manage, installation.id)
    seen.append(webhook_secret)
    later_pages = [(await manage.get(f"/installations/{installation.id}/notifications")).body]
    endpoint_id = re.findall(rb'data-endpoint-id="([^"]+)"', later_pages[0])[0].decode()
    rotated_page = await manage.follow(
        await manage.post(
            f"/installations/{installation.id}/notifications/{endpoint_id}/rotate",
            {"csrf_token": manage.csrf(), "opened_for": "manage"},
        )
    )
    webhook_secret = re.findall(r"data-signing-secret>([^<]+)<", rotated_page.body.decode())[0]
    seen.append(webhook_secret)
    await add_chat_endpoint(manage, installation.id, CHAT_URL)
    seen.append(CHAT_URL.split("/services/")[1])
    return manage, webhook_secret, later_pages


async def rotate_the_token(world: World, installation_id: str, seen: list[str]) -> None:
    """A rotation code for this installation only; the core sends a new token, the old one
    is refused and the new one sends; the code is single use."""
    first_token = world.core.state.installations[installation_id].token
    rotation_code = await mint(world.app, installation_id)
    seen.append(rotation_code)
    rotated = await world.core.rotate(installation_id, rotation_code)
    assert rotated.token != first_token
    seen.append(rotated.token)
    assert await core_answers(world, first_token) == 401  # the old token is refused by core
    due = await schedule_soon(world, installation_id, "cnt_page")
    assert (await run_at(world, due, "cnt_page"))["status"] == "completed"  # the new one works
    sent = world.core.calls.of("transitions")[-1]
    assert sent.header("Authorization") == f"Bearer {rotated.token}"
    with pytest.raises(InstallError):
        await world.core.rotate(installation_id, rotation_code)


async def stored_bytes(file_db: SqliteDatabase, folder: Path) -> bytes:
    """The database file and its WAL, checkpointed."""
    file_db.connection.execute("PRAGMA wal_checkpoint(FULL)")
    stored = b"".join(p.read_bytes() for p in folder.glob("plugin.sqlite3*"))
    assert len(stored) > 10_000
    assert b"v1." in stored  # the sealed token really is in the file, under its own name
    return stored


def sent_to(*receivers: Receiver) -> bytes:
    return b"".join(d.body + repr(d.headers).encode() for r in receivers for d in r.received)


def assert_no_raw_secret(
    world: World,
    stored: bytes,
    caplog: pytest.LogCaptureFixture,
    seen: list[str],
    shown_after: list[bytes],
) -> None:
    """Every raw secret the flows used, and any value of their shapes, is absent from the
    database file and from every log line; nor in a page after the one that showed it, nor
    in what was sent to the endpoints."""
    for call in world.core.calls.calls:
        if call.endpoint == "exchange" and isinstance(call.body, dict):
            seen.append(str(call.body.get("code")))
    seen.extend(world.core.state.delegations)  # every delegation token core issued
    assert world.core.state.delegations
    logs = caplog.text.encode()
    assert "activated" in caplog.text  # the log is being captured
    for place in (stored, logs, *shown_after):
        assert RAW_SECRET.findall(place) == []
        for secret in seen:
            for form in (secret, secret.removeprefix("whsec_")):
                assert form.encode() not in place


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
    seen.append(installation.token)
    assert installation.id in world.core.state.installations

    manage, webhook_secret, later_pages = await add_endpoints(world, installation, seen)

    # Use it: a launch (delegation sealed into a session) and a schedule sent with the token.
    due = await schedule_soon(world, installation.id, "cnt_en")
    assert (await run_at(world, due, "cnt_en"))["status"] == "completed"

    await rotate_the_token(world, installation.id, seen)

    # Uninstall: core revokes the token; the plugin learns it from core's answers.
    world.core.state.add_content("cnt_late", "Later")
    due = await schedule_soon(world, installation.id, "cnt_late")
    open_page = await world.browser_for(installation)
    world.core.uninstall(installation.id)
    result = await run_at(world, due, "cnt_late")
    assert result == {"status": "refused", "result_code": "plugin_unauthorized"}
    [told] = receiver.received  # the refusal was told, signed with the rotated secret
    assert signed_by(webhook_secret, told)
    [said] = chat.texts()  # and said in the chat, in words
    assert said.startswith("• Could not publish “Later”")
    later_pages.append((await manage.get(f"/installations/{installation.id}")).body)
    page = await open_page.get(f"/installations/{installation.id}")
    assert page.status == 401
    assert 'data-error-code="plugin_unauthorized"' in page.body.decode()

    stored = await stored_bytes(file_db, tmp_path)
    assert_no_raw_secret(world, stored, caplog, seen, [*later_pages, sent_to(receiver, chat)])


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


async def test_schedule_replace_cancel_send_and_delete_through_the_pages(runtime: Runtime) -> None:
    """The journey on both runtimes: an editor schedules a publish and replaces it, a forged
    post makes nothing, Manage lists another content's schedule and cancels it, the tick
    sends the one left once when it is due, and the operator deletes every row."""
    installation_id = await runtime.install()
    base = f"/installations/{installation_id}"

    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    first = await editor.create(installation_id, runtime.noon(3))
    second = await editor.create(installation_id, runtime.noon(2))
    assert f'data-confirmation="{second}"' in editor.page
    assert [item["status"] for item in schedules_on(editor.page)] == ["pending", "superseded"]
    forged = await editor.create(installation_id, runtime.noon(4), csrf_token="x" * 43)
    assert forged == "403"  # nothing made
    other = await runtime.open_page(installation_id, content_id=runtime.other_content)
    cancelled = await other.create(installation_id, runtime.noon(2))
    manage = await runtime.open_page(installation_id)
    assert {second, cancelled} <= {item["schedule-id"] for item in schedules_on(manage.page)}
    assert (await manage.get(f"{base}/schedules/{cancelled}/cancel")).status_code == 200
    done = await manage.post_form(
        f"{base}/schedules/{cancelled}/cancel", {"csrf_token": manage.csrf}
    )
    assert done.status_code == 303, done.text
    sql = "SELECT * FROM schedules WHERE installation_id = ?"
    rows = {row["id"]: row for row in await runtime.rows(sql, installation_id)}
    assert {sid: (row["content_id"], row["status"]) for sid, row in rows.items()} == {
        first: (runtime.content, "superseded"),
        second: (runtime.content, "pending"),
        cancelled: (runtime.other_content, "cancelled"),
    }
    due = rows[second]
    key = f"sched:{installation_id}:{second}:r2"  # the next revision of the content's
    assert (rows[first]["revision"], due["revision"], due["idempotency_key"]) == (1, 2, key)
    noon_then = datetime.fromisoformat(runtime.noon(2)).replace(tzinfo=ZoneInfo("Europe/Paris"))
    assert due["due_at"] == int(noon_then.timestamp() * 1000)

    soon = runtime.minute_ahead()  # a tick stands for at most 15 minutes ahead
    move = "UPDATE schedules SET due_at = ?, next_attempt_at = ? WHERE id = ?"
    await runtime.execute(move, soon, soon, second)
    await runtime.tick(soon - 60_000)
    assert runtime.calls("transitions") == []  # nothing before it is due
    await runtime.tick(soon)
    [call] = runtime.calls("transitions")
    assert (call["status"], call["code"], call["applied"]) == (200, "transition_applied", True)
    assert call["headers"]["idempotency-key"] == due["idempotency_key"]
    assert call["body"]["version_id"] == due["version_id"]
    page = (await manage.get(base)).text
    assert f'data-schedule-id="{second}" data-status="completed"' in page

    async with runtime.http() as http:
        delete = f"/admin/installations/{installation_id}/delete-data"
        deleted = await http.post(delete, headers=runtime.operator)
    assert deleted.json() == {"code": "deleted", "installation_id": installation_id}
    for table in ("schedules", "sessions", "activation_codes"):
        assert await runtime.count(table, installation_id) == 0, table
    attempts = "SELECT count(*) AS n FROM schedule_attempts WHERE schedule_id = ?"
    assert await runtime.rows(attempts, second) == [{"n": 0}]
    assert await runtime.rows("SELECT id FROM installations WHERE id = ?", installation_id) == []
    assert (await editor.get(base)).status_code in (401, 404)
