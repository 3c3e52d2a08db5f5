"""Sessions do not outlive an uninstall (issue 26, item 2). Once any call with the
installation's token is answered `plugin_unauthorized` (the runner's send, a page's content
read, a launch exchange), every session of that installation is refused at once with 401
`plugin_unauthorized`, forms included: before, a manage session could still add an endpoint
and cancel for up to 30 minutes. A rotation (Dee Wan gives the installation a new token)
lets new sessions in again.

In-process, with the fake Dee Wan's uninstall.
"""

from __future__ import annotations

from typing import Any

from fake_core import Fault
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import mint
from tests.support.app import FakeClock
from tests.support.webhooks import HOOK_URL
from tests.support.world import Browser, World, schedule, tick_at


def tables(db: SqliteDatabase) -> tuple[Any, ...]:
    return tuple(
        db.connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("notification_endpoints", "schedules")
    ) + tuple(db.connection.execute("SELECT status FROM schedules ORDER BY id").fetchall())


async def forms_refused(
    world: World, installation_id: str, manage: Browser, editor: Browser, waiting_id: str
) -> None:
    """Every session of the installation: pages and forms, 401 `plugin_unauthorized`, and
    nothing changed."""
    before = tables(world.db)
    answers = [
        await manage.post_pairs(
            f"/installations/{installation_id}/notifications",
            [
                ("csrf_token", manage.csrf()),
                ("opened_for", "manage"),
                ("url", HOOK_URL),
                ("events", "schedule.refused"),
            ],
        ),
        await manage.post(
            f"/installations/{installation_id}/schedules/{waiting_id}/cancel",
            {"csrf_token": manage.csrf(), "opened_for": "manage"},
        ),
        await editor.post(
            f"/installations/{installation_id}/schedules/{waiting_id}/cancel",
            {"csrf_token": editor.csrf(), "opened_for": "cnt_en"},
        ),
        await manage.get(f"/installations/{installation_id}"),
        await editor.get(f"/installations/{installation_id}/schedules/{waiting_id}/cancel"),
    ]
    for answer in answers:
        assert answer.status == 401, answer.body[:300]
        assert 'data-error-code="plugin_unauthorized"' in answer.body.decode()
    assert tables(world.db) == before


async def test_after_the_runner_is_told_plugin_unauthorized_every_session_is_refused(
    world: World, clock: FakeClock
) -> None:
    installation = await world.install()
    world.core.state.add_content("cnt_b", "Second")
    due = await schedule(world, installation, "cnt_b", in_minutes=2)
    waiting = await schedule(world, installation, "cnt_en", in_minutes=30)
    manage = await world.browser_for(installation, content_id=None)
    await manage.get(f"/installations/{installation.id}")
    editor = await world.open_page(installation)
    world.core.uninstall(installation.id)
    await tick_at(world, due["due_at"])  # its send is answered 401 plugin_unauthorized
    refused = world.db.connection.execute(
        "SELECT status, result_code FROM schedules WHERE id = ?", (due["id"],)
    ).fetchone()
    assert tuple(refused) == ("refused", "plugin_unauthorized")
    await forms_refused(world, installation.id, manage, editor, waiting["id"])


async def test_after_a_page_is_told_plugin_unauthorized_every_session_is_refused(
    world: World,
) -> None:
    installation = await world.install()
    waiting = await schedule(world, installation, "cnt_en", in_minutes=30)
    manage = await world.browser_for(installation, content_id=None)
    await manage.get(f"/installations/{installation.id}")
    editor = await world.open_page(installation)
    reader = await world.browser_for(installation, content_id="cnt_pub")
    world.core.uninstall(installation.id)
    # Another person's content page: its read is the call that is refused.
    assert (await reader.get(f"/installations/{installation.id}")).status == 401
    await forms_refused(world, installation.id, manage, editor, waiting["id"])


async def test_after_a_launch_is_told_plugin_unauthorized_every_session_is_refused(
    world: World,
) -> None:
    installation = await world.install()
    waiting = await schedule(world, installation, "cnt_en", in_minutes=30)
    manage = await world.browser_for(installation, content_id=None)
    await manage.get(f"/installations/{installation.id}")
    editor = await world.open_page(installation)
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    world.core.uninstall(installation.id)
    assert (await Browser(world.app).get(launch.url)).status == 401  # the exchange refused
    await forms_refused(world, installation.id, manage, editor, waiting["id"])


async def test_other_installations_sessions_are_not_touched(world: World) -> None:
    gone = await world.install()
    kept = await world.install()
    manage = await world.browser_for(kept, content_id=None)
    reader = await world.browser_for(kept, content_id="cnt_pub")
    launch = world.core.issue_launch(gone.id, "usr_editor", {"kind": "manage"})
    world.core.uninstall(gone.id)
    assert (await Browser(world.app).get(launch.url)).status == 401
    assert (await manage.get(f"/installations/{kept.id}")).status == 200
    assert (await reader.get(f"/installations/{kept.id}")).status == 200


async def test_a_new_token_lets_sessions_in_again(world: World) -> None:
    """A token Dee Wan replaced without telling the plugin is answered `plugin_unauthorized`
    too; once Dee Wan rotates the installation to a new token, its sessions work again."""
    installation = await world.install()
    manage = await world.browser_for(installation, content_id=None)
    world.core.state.installations[installation.id].token = "dwp_" + "x" * 43  # replaced
    launch = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"})
    assert (await Browser(world.app).get(launch.url)).status == 401
    assert (await manage.get(f"/installations/{installation.id}")).status == 401
    world.clock.advance(1_000)
    await world.core.rotate(installation.id, await mint(world.app, installation.id))
    assert (await manage.get(f"/installations/{installation.id}")).status == 200
    fresh = await world.browser_for(installation, content_id=None)
    assert (await fresh.get(f"/installations/{installation.id}")).status == 200


async def test_a_launch_exchange_that_succeeds_with_the_same_token_ends_the_lock_out(
    world: World, clock: FakeClock
) -> None:
    """Issue 37, item 4: Dee Wan answered `plugin_unauthorized` once (to the runner), then
    accepted the same token for a launch: the person who had just opened Scheduling from Dee
    Wan was told to open Scheduling from Dee Wan. A successful exchange proves the token is
    accepted again."""
    installation = await world.install()
    due = await schedule(world, installation, "cnt_en", in_minutes=2)
    manage = await world.browser_for(installation, content_id=None)
    world.core.faults.push(Fault.respond(401, "plugin_unauthorized"), endpoint="transitions")
    await tick_at(world, due["due_at"])
    assert (await manage.get(f"/installations/{installation.id}")).status == 401
    clock.advance(1_000)
    fresh = await world.browser_for(installation, content_id=None)  # the exchange succeeds
    assert (await fresh.get(f"/installations/{installation.id}")).status == 200
    assert (await manage.get(f"/installations/{installation.id}")).status == 200
    # A later refusal locks the installation out again.
    clock.advance(1_000)
    reader = await world.browser_for(installation, content_id="cnt_pub")
    world.core.faults.push(Fault.respond(401, "plugin_unauthorized"), endpoint="content")
    assert (await reader.get(f"/installations/{installation.id}")).status == 401
    assert (await fresh.get(f"/installations/{installation.id}")).status == 401
    # And a success ends it again.
    clock.advance(1_000)
    again = await world.browser_for(installation, content_id=None)
    assert (await again.get(f"/installations/{installation.id}")).status == 200
