"""Sessions do not outlive an uninstall (issue 26, item 2). Once any call with the
installation's token is answered `plugin_unauthorized` (the runner's send, a page's content
read, a launch exchange), every session of that installation is refused at once with 401
`plugin_unauthorized`, forms included: before, a manage session could still add an endpoint
and cancel for up to 30 minutes. A rotation (Dee Wan gives the installation a new token)
lets new sessions in again.

On both runtimes where the test takes `runtime`; in-process, with the fake Dee Wan's
uninstall, otherwise.
"""

from __future__ import annotations

from typing import Any

from fake_core import Fault
from tests.support.activation import mint
from tests.support.app import FakeClock
from tests.support.runtimes import Runtime, Visitor
from tests.support.webhooks import HOOK_URL
from tests.support.world import Browser, World, local, schedule, tick_at


async def tables(runtime: Runtime, installation_id: str) -> tuple[Any, ...]:
    sql = "SELECT status FROM schedules WHERE installation_id = ? ORDER BY id"
    statuses = [row["status"] for row in await runtime.rows(sql, installation_id)]
    return await runtime.count("notification_endpoints", installation_id), statuses


async def create(runtime: Runtime, editor: Visitor, installation_id: str, minutes: int) -> str:
    """A publish through the content page's form, due `minutes` whole minutes ahead (UTC)."""
    fields = {**editor.shown, "csrf_token": editor.csrf, "transition": "publish:published",
              "local_time": local(runtime.minute_ahead(minutes)), "timezone": "UTC"}  # fmt: skip
    made = await editor.post_form(f"/installations/{installation_id}/schedules", fields)
    assert made.status_code == 303, made.text
    return made.headers["location"].split("created=", 1)[1]


async def sessions(runtime: Runtime) -> tuple[str, Visitor, Visitor, str]:
    """An installation with a schedule waiting half an hour, a manage and an editor session."""
    installation_id = await runtime.install()
    editor = await runtime.open_page(installation_id, content_id=runtime.content)
    waiting = await create(runtime, editor, installation_id, 30)
    return installation_id, await runtime.open_page(installation_id), editor, waiting


async def forms_refused(
    runtime: Runtime, installation_id: str, manage: Visitor, editor: Visitor, waiting_id: str
) -> None:
    """Every session of the installation: pages and forms, 401 `plugin_unauthorized`, and
    nothing changed."""
    before = await tables(runtime, installation_id)
    schedule = f"/installations/{installation_id}/schedules/{waiting_id}"
    endpoint = {"csrf_token": manage.csrf, "opened_for": "manage", "url": HOOK_URL,
                "events": ["schedule.refused"]}  # fmt: skip
    answers = [
        await manage.post_form(f"/installations/{installation_id}/notifications", endpoint),
        await manage.post_form(f"{schedule}/cancel", {"csrf_token": manage.csrf}),
        await editor.post_form(f"{schedule}/cancel", {"csrf_token": editor.csrf}),
        await manage.get(f"/installations/{installation_id}"),
        await editor.get(f"{schedule}/cancel"),
    ]
    for answer in answers:
        assert answer.status_code == 401, answer.text[:300]
        assert 'data-error-code="plugin_unauthorized"' in answer.text
    assert await tables(runtime, installation_id) == before


async def test_after_the_runner_is_told_plugin_unauthorized_every_session_is_refused(
    runtime: Runtime,
) -> None:
    installation_id, manage, editor, waiting = await sessions(runtime)
    due = await create(runtime, editor, installation_id, 2)
    runtime.uninstall(installation_id)
    sql = "SELECT due_at, status, result_code FROM schedules WHERE id = ?"
    [row] = await runtime.rows(sql, due)
    await runtime.tick(row["due_at"])  # its send is answered 401 plugin_unauthorized
    [row] = await runtime.rows(sql, due)
    assert (row["status"], row["result_code"]) == ("refused", "plugin_unauthorized")
    await forms_refused(runtime, installation_id, manage, editor, waiting)


async def test_after_a_page_is_told_plugin_unauthorized_every_session_is_refused(
    runtime: Runtime,
) -> None:
    installation_id, manage, editor, waiting = await sessions(runtime)
    reader = await runtime.open_page(installation_id, content_id=runtime.content)
    runtime.uninstall(installation_id)
    # Another session's content page: its read is the call that is refused.
    assert (await reader.get(f"/installations/{installation_id}")).status_code == 401
    await forms_refused(runtime, installation_id, manage, editor, waiting)


async def test_after_a_launch_is_told_plugin_unauthorized_every_session_is_refused(
    runtime: Runtime,
) -> None:
    installation_id, manage, editor, waiting = await sessions(runtime)
    launch = runtime.launch_path(installation_id)
    runtime.uninstall(installation_id)
    async with runtime.http() as http:
        assert (await http.get(launch)).status_code == 401  # the exchange refused
    await forms_refused(runtime, installation_id, manage, editor, waiting)


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


async def test_a_5xx_whose_body_says_plugin_unauthorized_locks_nothing(
    world: World, clock: FakeClock
) -> None:
    """Issue 45, item 13: a 503 with `plugin_unauthorized` in its body locked the
    installation's sessions and agent keys out. Only a 401 says Dee Wan no longer accepts the
    installation; a 5xx is Dee Wan failing, and its send is tried again."""
    from tests.support.agents import call_tool, mint_key

    installation = await world.install()
    due = await schedule(world, installation, "cnt_en", in_minutes=2)
    manage = await world.browser_for(installation, content_id=None)
    key = await mint_key(world, installation)
    world.core.faults.push(Fault.respond(503, "plugin_unauthorized"), endpoint="transitions")
    await tick_at(world, due["due_at"])
    sql = "SELECT status, result_code FROM schedules WHERE id = ?"
    [row] = (await world.db.prepare(sql).bind(due["id"]).all()).results
    assert (row["status"], row["result_code"]) == ("retrying", "plugin_unauthorized")
    assert (await manage.get(f"/installations/{installation.id}")).status == 200
    listed = await call_tool(world, key, "list_schedules", {})
    assert not listed.get("isError"), listed
