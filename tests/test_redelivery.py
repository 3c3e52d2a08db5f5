"""A retry horizon of days, and replay (issue 28, item 4), through the public surface: a
receiver failing for days on the virtual clock, the manage page's Send again, Replay failures
since … and Enable again, with real ticks against the fake Dee Wan."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from fake_core import Fault
from fake_core.state import Installation
from fake_core.transport import MockTransport
from scheduling.actions.access import ENDPOINT_CALLS
from scheduling.domain.notifications import GIVE_UP_AFTER_MS, RETRY_DELAYS_MS
from scheduling.ports import OutboundResponse
from tests.support.webhooks import (
    HOOK_URL,
    Receiver,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import MINUTE, Browser, World, schedule, tick_at

HOUR = 60 * MINUTE
DAY = 24 * HOUR
OTHER_URL = "https://relay.example.org/hooks/sched"


class Hooks:
    """One installation, two endpoints hearing of refusals: `failing` (answering what the
    test says, by the hour) and `healthy`."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.failing = Receiver(HOOK_URL, default=503, clock=world.clock.now_ms)
        self.healthy = Receiver(OTHER_URL, clock=world.clock.now_ms)
        with_receivers(world, self.failing, self.healthy)

    async def set_up(self) -> Installation:
        self.installation = await self.world.install()
        self.manage: Browser = await self.world.browser_for(self.installation, content_id=None)
        self.secret = await add_endpoint(self.manage, self.installation.id, HOOK_URL)
        await add_endpoint(self.manage, self.installation.id, OTHER_URL)
        [row] = (
            await self.world.db.prepare("SELECT id FROM notification_endpoints WHERE url = ?")
            .bind(HOOK_URL)
            .all()
        ).results
        self.endpoint_id = str(row["id"])
        return self.installation

    async def refusals(self, count: int, every_ms: int) -> None:
        """`count` schedules Dee Wan will refuse, due in 5 minutes and every `every_ms` after."""
        for n in range(count):
            content = f"day{n}"
            self.world.core.state.add_content(content, f"Day {n} news")
            await schedule(
                self.world, self.installation, content, in_minutes=5 + n * every_ms // MINUTE
            )
        self.world.core.faults.push(
            Fault.respond(409, "workflow_conflict"), endpoint="transitions", times=count
        )

    async def endpoint(self) -> dict[str, Any]:
        found = await (
            self.world.db.prepare("SELECT * FROM notification_endpoints WHERE id = ?")
            .bind(self.endpoint_id)
            .first()
        )
        assert found is not None
        return found

    async def mine(self, where: str = "1 = 1") -> list[dict[str, Any]]:
        result = await (
            self.world.db.prepare(
                f"SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND {where}"
                " ORDER BY created_at"
            )
            .bind(self.endpoint_id)
            .all()
        )
        return result.results

    def form(self) -> dict[str, str]:
        return {"csrf_token": self.manage.csrf(), "opened_for": "manage"}

    async def page(self) -> str:
        """The manage page, from a fresh launch (a session does not last the days this runs)."""
        self.manage = await self.world.browser_for(self.installation, content_id=None)
        return (
            await self.manage.get(f"/installations/{self.installation.id}/notifications")
        ).body.decode()


@pytest.fixture
def hooks(world: World) -> Hooks:
    return Hooks(world)


async def run_clock(
    world: World, until: int, *, recovers_at: int | None = None, hooks: Hooks
) -> None:
    """Tick at every instant something is due (a schedule, a delivery's next try), up to
    `until`; the failing receiver answers 204 from `recovers_at` on."""
    while True:
        due = await world.db.prepare(
            "SELECT min(at) AS at FROM (SELECT min(next_attempt_at) AS at FROM webhook_deliveries"
            " WHERE status = 'waiting' UNION ALL SELECT min(next_attempt_at) FROM schedules"
            " WHERE status IN ('pending', 'retrying'))"
        ).first()
        at = (due or {}).get("at")
        if at is None or at > until:
            return
        if recovers_at is not None and at >= recovers_at:
            hooks.failing.default = 204
        await tick_at(world, at)


# -- the horizon, and disabling -----------------------------------------------------------


async def test_a_receiver_failing_for_days_is_tried_for_72_hours_then_disabled_at_5_days(
    world: World, hooks: Hooks
) -> None:
    await hooks.set_up()
    await hooks.refusals(6, DAY)  # a refusal a day
    start = world.clock.now_ms() + 5 * MINUTE
    await run_clock(world, start + 6 * DAY, hooks=hooks)
    first = hooks.failing.received[0].id
    tries = [d.at for d in hooks.failing.received if d.id == first]
    # Spread to the horizon: the first at its event, the last 72 hours after it.
    assert tries[0] == start
    assert tries[-1] - tries[0] == GIVE_UP_AFTER_MS >= 72 * HOUR
    gaps = [b - a for a, b in itertools.pairwise(tries)]
    assert all(gap <= RETRY_DELAYS_MS[-1] for gap in gaps)
    assert gaps[:6] == sorted(gaps[:6])  # backing off
    assert len({d.body for d in hooks.failing.received if d.id == first}) == 1
    assert all(signed_by(hooks.secret, d) for d in hooks.failing.received)
    [oldest, *_] = await hooks.mine()
    assert (oldest["status"], oldest["finished_at"] - oldest["created_at"]) == (
        "failed",
        GIVE_UP_AFTER_MS,
    )
    # Disabled at the first failed attempt five days after the first failure.
    endpoint = await hooks.endpoint()
    assert endpoint["disabled_reason"] == "failing"
    assert 5 * DAY <= endpoint["disabled_at"] - start <= 5 * DAY + RETRY_DELAYS_MS[-1]
    assert await hooks.mine("status = 'waiting'") == []
    disabled = await hooks.mine("last_error = 'endpoint_disabled'")
    assert disabled
    assert all(d["status"] == "failed" for d in disabled)
    sent = len(hooks.failing.received)
    await run_clock(world, start + 8 * DAY, hooks=hooks)
    assert len(hooks.failing.received) == sent  # nothing more to it
    assert len(hooks.healthy.received) == 6  # the other endpoint heard of each, once
    page = await hooks.page()
    assert 'data-disabled-reason="failing"' in page
    assert "it accepted nothing it was sent for 5 days" in page
    assert "the endpoint accepted nothing for 5 days, so it was disabled" in page


async def test_a_receiver_back_after_80_hours_is_not_disabled(world: World, hooks: Hooks) -> None:
    await hooks.set_up()
    await hooks.refusals(6, DAY)
    start = world.clock.now_ms() + 5 * MINUTE
    await run_clock(world, start + 6 * DAY, recovers_at=start + 80 * HOUR, hooks=hooks)
    statuses = [d["status"] for d in await hooks.mine()]
    assert statuses == ["failed", *(["delivered"] * 5)]  # the first ran out at 72 hours
    endpoint = await hooks.endpoint()
    assert (endpoint["disabled_at"], endpoint["failing_since"]) == (None, None)


# -- Send again, Replay failures since …, Enable again ---------------------------------------


async def test_send_again_sends_the_same_id_and_body_within_the_request(
    world: World, hooks: Hooks
) -> None:
    await hooks.set_up()
    hooks.failing.default = 204
    await hooks.refusals(1, DAY)
    await run_clock(world, world.clock.now_ms() + HOUR, hooks=hooks)
    [delivered] = await hooks.mine()
    base = f"/installations/{hooks.installation.id}/notifications/{hooks.endpoint_id}"
    world.clock.advance(2 * HOUR)
    page = await hooks.page()
    again = await hooks.manage.post(f"{base}/deliveries/{delivered['id']}/send-again", hooks.form())
    assert again.status == 303
    first, second = hooks.failing.received
    assert (second.id, second.body) == (first.id, first.body)
    assert second.headers["webhook-timestamp"] != first.headers["webhook-timestamp"]
    assert signed_by(hooks.secret, second)
    [row] = await hooks.mine()
    assert (row["status"], row["attempt_count"]) == ("delivered", 1)
    assert row["retries_from"] == world.clock.now_ms()
    assert f"{base}/deliveries/{delivered['id']}/send-again" in page
    # A delivery waiting for its time is not "sent again"; nor one of another endpoint.
    await (
        world.db.prepare(
            "UPDATE webhook_deliveries SET status = 'waiting', finished_at = NULL,"
            " next_attempt_at = ? WHERE id = ?"
        )
        .bind(world.clock.now_ms() + HOUR, delivered["id"])
        .run()
    )
    refused = await hooks.manage.post(
        f"{base}/deliveries/{delivered['id']}/send-again", hooks.form()
    )
    assert refused.status == 409
    assert b'data-error-code="not_sendable_again"' in refused.body
    assert len(hooks.failing.received) == 2


async def test_send_again_goes_through_the_visitors_pool_within_the_endpoints_calls(
    world: World, hooks: Hooks
) -> None:
    """A person's Send again is a call a visitor triggers: it leaves through the visitors'
    pool (never the runner's) and counts with the endpoint's test events, five a minute."""
    await hooks.set_up()
    hooks.failing.default = 204
    await hooks.refusals(1, DAY)
    await run_clock(world, world.clock.now_ms() + HOUR, hooks=hooks)
    [delivered] = await hooks.mine()
    pool = MockTransport(lambda _: OutboundResponse(204, {}, b""))  # the visitors' pool
    world.app.services.visitor_http = pool
    base = f"/installations/{hooks.installation.id}/notifications/{hooks.endpoint_id}"
    again = f"{base}/deliveries/{delivered['id']}/send-again"
    assert (await hooks.manage.post(again, hooks.form())).status == 303
    assert [request.url for request in pool.sent] == [HOOK_URL]
    assert len(hooks.failing.received) == 1  # nothing more through the runner's client
    for _ in range(ENDPOINT_CALLS.per_minute - 1):
        assert (await hooks.manage.post(f"{base}/test", hooks.form())).status == 303
    refused = await hooks.manage.post(again, hooks.form())
    assert refused.status == 429
    assert b'data-error-code="too_many_sends_again"' in refused.body
    assert refused.header("retry-after") == "60"
    assert len(pool.sent) == ENDPOINT_CALLS.per_minute


async def test_replay_failures_since_sends_again_those_of_the_window_only(
    world: World, hooks: Hooks
) -> None:
    await hooks.set_up()
    hooks.failing.default = 204
    await hooks.refusals(3, HOUR)
    await run_clock(world, world.clock.now_ms() + 3 * HOUR, hooks=hooks)
    now = world.clock.now_ms()
    await hooks.page()
    old, *recent = await hooks.mine()
    for row, hours_ago in ((old, 30), (recent[0], 5), (recent[1], 1)):
        await (  # failed, at these ages
            world.db.prepare(
                "UPDATE webhook_deliveries SET status = 'failed', created_at = ?,"
                " finished_at = ?, last_http_status = 503 WHERE id = ?"
            )
            .bind(now - hours_ago * HOUR, now - hours_ago * HOUR + 1, row["id"])
            .run()
        )
    sent = len(hooks.failing.received)
    base = f"/installations/{hooks.installation.id}/notifications/{hooks.endpoint_id}"
    replay = await hooks.manage.post(f"{base}/replay", {**hooks.form(), "since_hours": "24"})
    assert replay.status == 303
    waiting = await hooks.mine("status = 'waiting'")
    assert sorted(w["id"] for w in waiting) == sorted(r["id"] for r in recent)
    assert {(w["attempt_count"], w["next_attempt_at"]) for w in waiting} == {(0, now)}
    await tick_at(world, now)  # the next tick sends them, same ids
    again = hooks.failing.received[sent:]
    assert sorted(d.id for d in again) == sorted(r["id"] for r in recent)
    assert [d["status"] for d in await hooks.mine()] == ["failed", "delivered", "delivered"]
    bad = await hooks.manage.post(f"{base}/replay", {**hooks.form(), "since_hours": "5"})
    assert bad.status == 422
    assert b'data-error-code="unknown_replay_window"' in bad.body
    # A disabled endpoint is enabled first.
    await (
        world.db.prepare(
            "UPDATE notification_endpoints SET disabled_at = ?, disabled_reason = 'gone'"
            " WHERE id = ?"
        )
        .bind(now, hooks.endpoint_id)
        .run()
    )
    refused = await hooks.manage.post(f"{base}/replay", {**hooks.form(), "since_hours": "72"})
    assert refused.status == 409
    assert b'data-error-code="endpoint_disabled"' in refused.body
    assert 'data-disabled-reason="gone"' in await hooks.page()
    assert (await hooks.manage.post(f"{base}/enable", hooks.form())).status == 303
    endpoint = await hooks.endpoint()
    assert (endpoint["disabled_at"], endpoint["disabled_reason"]) == (None, None)
    replay = await hooks.manage.post(f"{base}/replay", {**hooks.form(), "since_hours": "72"})
    assert replay.status == 303
    assert [w["id"] for w in await hooks.mine("status = 'waiting'")] == [old["id"]]


async def test_only_a_manage_launch_may_send_again_or_replay(world: World, hooks: Hooks) -> None:
    installation = await hooks.set_up()
    editor = await world.open_page(installation)
    base = f"/installations/{installation.id}/notifications/{hooks.endpoint_id}"
    form = {"csrf_token": editor.csrf(), "opened_for": "cnt_en"}
    for path in (f"{base}/replay", f"{base}/enable", f"{base}/deliveries/msg_x_whe_y/send-again"):
        refused = await editor.post(path, {**form, "since_hours": "24"})
        assert refused.status == 403, path
        assert b'data-error-code="manage_only"' in refused.body
