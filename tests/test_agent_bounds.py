"""What agents and their keys may make, and for how long: a key or an endpoint is made only
once Dee Wan confirms the installation's token still works, a key's rights never outlive
its person's confirmation by Dee Wan by more than a day, what one person's and one
installation's agents may propose in a day is bounded (withdrawn and decided proposals
count), and what ended is purged."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from scheduling.actions import agents
from scheduling.repository.installations import CHECKED_FOR_MS
from tests.support.agents import (
    call_tool,
    confirm_on_page,
    mint_key,
    mint_with,
    post_mcp,
    proposal,
    propose,
    stateless,
)
from tests.support.webhooks import HOOK_URL, Receiver, add_endpoint, with_receivers
from tests.support.world import World, tick_at

DAY_MS = 86_400_000
LATER = {**proposal(), "local_time": "2026-09-01T08:30"}  # two months after the tests' clock


def content_reads(world: World) -> int:
    return len(world.core.calls.of("content"))


async def count(world: World, table: str) -> int:
    row = await world.db.prepare(f"SELECT count(*) AS n FROM {table}").first()
    assert row is not None
    return int(row["n"])


# -- 7: one call to Dee Wan before a key or an endpoint is made ----------------------------


async def test_after_an_uninstall_no_key_or_endpoint_is_made(world: World) -> None:
    """A manage session opened before Dee Wan uninstalled the plugin (and before any call told
    the plugin so) mints no key and adds no endpoint: the one call each makes first is answered
    `plugin_unauthorized`, and from then on every session and key of the installation ends."""
    installation = await world.install()
    key = await mint_key(world, installation)
    manage = await world.open_page(installation, content_id=None)
    await manage.get(f"/installations/{installation.id}/agents")
    fields = {"csrf_token": manage.csrf(), "opened_for": "manage", "name": "Late bot", "days": "30"}
    world.core.uninstall(installation.id)
    reads = content_reads(world)
    minted = await manage.post(f"/installations/{installation.id}/agent-keys", fields)
    assert minted.status == 401
    assert b'data-error-code="plugin_unauthorized"' in minted.body
    assert content_reads(world) == reads + 1
    assert await count(world, "agent_keys") == 1  # the one minted before
    endpoint = [("csrf_token", manage.csrf()), ("opened_for", "manage"), ("url", HOOK_URL)]
    added = await manage.post_pairs(
        f"/installations/{installation.id}/notifications",
        [*endpoint, ("events", "schedule.refused")],
    )
    assert added.status == 401  # the session ended with the mint's answer
    assert await count(world, "notification_endpoints") == 0
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 401


async def test_an_endpoint_is_added_only_once_dee_wan_confirms_the_token(world: World) -> None:
    installation = await world.install()
    with_receivers(world, Receiver(HOOK_URL))
    manage = await world.open_page(installation, content_id=None)
    reads = content_reads(world)
    await add_endpoint(manage, installation.id)
    assert content_reads(world) == reads + 1  # one call, the manage session's delegation
    world.core.faults.down_for(5, world.clock.now_ms())
    fields = [("csrf_token", manage.csrf()), ("opened_for", "manage")]
    fields += [("url", HOOK_URL + "/second"), ("events", "schedule.refused")]
    refused = await manage.post_pairs(f"/installations/{installation.id}/notifications", fields)
    assert refused.status == 503
    assert HOOK_URL.encode() + b"/second" in refused.body  # the form kept as typed
    assert await count(world, "notification_endpoints") == 1
    world.core.faults.clear()
    world.core.uninstall(installation.id)
    gone = await manage.post_pairs(f"/installations/{installation.id}/notifications", fields)
    assert gone.status == 401
    assert b'data-error-code="plugin_unauthorized"' in gone.body
    assert await count(world, "notification_endpoints") == 1


async def test_a_content_key_proposes_what_dee_wan_offers_when_it_is_minted(
    world: World,
) -> None:
    """The mint reads the content with the person's delegation: a change Dee Wan stopped
    offering since their page was shown is not the key's."""
    installation = await world.install()
    editor = await world.open_page(installation, content_id="cnt_en")
    world.core.state.persons["usr_editor"].transitions = frozenset({"unpublish"})
    key = await mint_with(editor, installation.id, name="Release bot")
    refused = await call_tool(world, key, "propose_schedule", proposal())
    assert refused["_meta"]["code"] == "transition_not_allowed"


# -- 7: a key's rights are confirmed by Dee Wan at least daily --------------------------------


async def test_a_key_works_only_within_a_day_of_its_persons_rights_confirmed(
    world: World,
) -> None:
    """Keys carry no delegation, so Dee Wan confirms their person's rights only when the
    person opens Scheduling: a manage launch for a manage key, their content's page for a
    content key. A day without it, the key answers 401 until they do."""
    installation = await world.install()
    manage_key = await mint_key(world, installation, days="30")
    content_key = await mint_key(world, installation, content_id="cnt_en", days="30")
    world.clock.now += CHECKED_FOR_MS - 1
    for key in (manage_key, content_key):
        assert (await post_mcp(world, key, stateless("tools/list"))).status == 200
    world.clock.now += 1
    for key in (manage_key, content_key):
        refused = await post_mcp(world, key, stateless("tools/list"))
        assert refused.status == 401
        assert "in the last day" in json.loads(refused.body)["error"]["message"]
    await world.open_page(installation, content_id="cnt_pub")  # another content: neither
    assert (await post_mcp(world, content_key, stateless("tools/list"))).status == 401
    assert (await post_mcp(world, manage_key, stateless("tools/list"))).status == 401
    await world.open_page(installation, content_id=None)  # a manage launch: its manage key
    assert (await post_mcp(world, manage_key, stateless("tools/list"))).status == 200
    assert (await post_mcp(world, content_key, stateless("tools/list"))).status == 401
    # Its content's page, after Dee Wan stopped offering the person a publish: the key is
    # back, with what Dee Wan offers them now.
    world.core.state.persons["usr_editor"].transitions = frozenset({"unpublish"})
    await world.open_page(installation, content_id="cnt_en")
    proposed = await call_tool(world, content_key, "propose_schedule", proposal())
    assert proposed["_meta"]["code"] == "transition_not_allowed"


async def test_after_an_uninstall_keys_end_within_a_day_without_any_call(
    world: World,
) -> None:
    """MCP never calls Dee Wan: after an uninstall nothing may tell the plugin, and no
    launch renews the keys, so they end within a day all the same."""
    installation = await world.install()
    key = await mint_key(world, installation, days="30")
    world.core.uninstall(installation.id)
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 200  # not told yet
    world.clock.now += CHECKED_FOR_MS
    assert (await post_mcp(world, key, stateless("tools/list"))).status == 401


# -- 6: what agents may propose in a day, and how long what ended is kept ------------------


async def test_what_agents_may_propose_in_a_day_is_bounded(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Propose and withdraw in a loop: past what one person's keys may make in a day, and
    what an installation's agents may, a proposal is refused, adding no row and no event."""
    monkeypatch.setattr(agents, "MADE_A_DAY_BY_PERSON", 4)
    monkeypatch.setattr(agents, "MADE_A_DAY", 6)
    installation = await world.install()
    with_receivers(world, Receiver(HOOK_URL))
    await add_endpoint(
        await world.open_page(installation, content_id=None),
        installation.id,
        events=("proposal.created",),
    )
    world.core.state.add_person("usr_second", "Alan Turing", {"publish"}, role="admin")
    first = await mint_key(world, installation, name="Loop bot")
    other_key = await mint_key(world, installation, name="Spare bot")  # the same person's
    second = await mint_key(world, installation, person="usr_second", name="Turing bot")

    async def propose_and_withdraw(key: str) -> dict[str, Any]:
        made = await call_tool(world, key, "propose_schedule", LATER)
        if not made["isError"]:
            withdrawn = {"proposal_id": made["structuredContent"]["proposal"]["id"]}
            assert not (await call_tool(world, key, "withdraw_proposal", withdrawn))["isError"]
        return made

    for _ in range(3):
        assert not (await propose_and_withdraw(first))["isError"]
    assert not (await propose_and_withdraw(other_key))["isError"]
    refused = await propose_and_withdraw(first)
    assert refused["_meta"]["code"] == "too_many_proposals"
    assert (
        "Ada Lovelace have made 4 proposals in the last 24 hours" in refused["content"][0]["text"]
    )
    assert (await propose_and_withdraw(other_key))["isError"]  # counted by person, not key
    assert (await count(world, "proposals"), await count(world, "webhook_deliveries")) == (4, 4)
    for _ in range(2):
        assert not (await propose_and_withdraw(second))["isError"]
    installation_full = await propose_and_withdraw(second)
    assert installation_full["_meta"]["code"] == "too_many_proposals"
    assert (
        "This installation's agents have made 6 proposals"
        in installation_full["content"][0]["text"]
    )
    assert (await count(world, "proposals"), await count(world, "webhook_deliveries")) == (6, 6)
    world.clock.now += DAY_MS  # a day on: room again (a manage launch keeps the keys usable)
    await world.open_page(installation, content_id=None)
    assert not (await propose_and_withdraw(first))["isError"]


async def test_what_agents_made_is_purged_once_ended(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """Proposals declined, withdrawn or past their time, and keys expired or revoked, go a
    month after they ended; a confirmed proposal goes with its schedule, at the retention's
    end; what is live stays."""
    caplog.set_level(logging.INFO, logger="scheduling.events")
    installation = await world.install()
    key = await mint_key(world, installation, days="1")
    withdrawn = await propose(world, key)
    await call_tool(world, key, "withdraw_proposal", {"proposal_id": withdrawn})
    declined = await propose(world, key)
    editor = await world.open_page(installation)
    path = f"/installations/{installation.id}/proposals/{declined}/decline"
    assert (await editor.post(path, {"csrf_token": editor.csrf(), "opened_for": "cnt_en"})).status
    await propose(world, key)  # expires tomorrow morning
    _, confirmed = await confirm_on_page(world, installation.id, await propose(world, key))
    schedule_id = confirmed.header("location").split("created=")[1]
    world.clock.now += 32 * DAY_MS  # the key ended a day in: 31 days on
    waiting = await mint_key(world, installation, name="Kept bot", days="30")
    kept = await call_tool(world, waiting, "propose_schedule", LATER)  # pending: kept
    assert not kept["isError"], kept
    await tick_at(world, world.clock.now_ms())
    statuses = await world.db.prepare("SELECT status FROM proposals ORDER BY status").all()
    assert [row["status"] for row in statuses.results] == ["confirmed", "pending"]
    names = await world.db.prepare("SELECT name FROM agent_keys").all()
    assert [row["name"] for row in names.results] == ["Kept bot"]
    purged = [json.loads(r.message) for r in caplog.records if "retention_purged" in r.message]
    assert (purged[-1]["proposals"], purged[-1]["agent_keys"]) == (3, 1)
    # The confirmed one goes with the schedule it became, at the retention's end.
    world.clock.now += 401 * DAY_MS  # it ended (refused, too late) at the last tick
    await world.open_page(installation, content_id=None)
    await tick_at(world, world.clock.now_ms())
    gone = await world.db.prepare("SELECT id FROM schedules WHERE id = ?").bind(schedule_id).first()
    assert gone is None
    assert await count(world, "proposals") == 0


# -- 10: well-formed input out of reach is refused plainly -----------------------------------


@pytest.mark.parametrize("since", ["²", "٣", "9" * 5000, "24 ", ""])
async def test_a_replay_window_of_no_listed_hours_is_refused_plainly(
    world: World, since: str
) -> None:
    installation = await world.install()
    with_receivers(world, Receiver(HOOK_URL))
    manage = await world.open_page(installation, content_id=None)
    await add_endpoint(manage, installation.id)
    endpoint = await world.db.prepare("SELECT id FROM notification_endpoints").first()
    assert endpoint is not None
    path = f"/installations/{installation.id}/notifications/{endpoint['id']}/replay"
    fields = {"csrf_token": manage.csrf(), "opened_for": "manage", "since_hours": since}
    answered = await manage.post(path, fields)
    assert answered.status == 422
    assert b'data-error-code="unknown_replay_window"' in answered.body


async def test_a_key_lasting_thousands_of_digits_of_days_is_refused_plainly(world: World) -> None:
    installation = await world.install()
    manage = await world.open_page(installation, content_id=None)
    await manage.get(f"/installations/{installation.id}/agents")
    fields = {
        "csrf_token": manage.csrf(),
        "opened_for": "manage",
        "name": "Bot",
        "days": "9" * 5000,
    }
    answered = await manage.post(f"/installations/{installation.id}/agent-keys", fields)
    assert answered.status == 422
    assert b'data-error-code="invalid_key_expiry"' in answered.body
