"""The Notifications section of the manage page: adding endpoints (and what is refused, storing
nothing), the secret shown once, rotate, delete, the test event, the failing mark; a content
launch may not see or change any of it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from fake_core import Fault
from scheduling.domain.notifications import GIVE_UP_AFTER_MS
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.app import FakeClock, base_env
from tests.support.docs import page as page_of
from tests.support.metrics import scrape, value
from tests.support.webhooks import (
    ANY_SECRET,
    HOOK_URL,
    SECRET_VALUE,
    Receiver,
    add_endpoint,
    signed_by,
    with_receivers,
)
from tests.support.world import Browser, World, schedule, tick_at

REFUSALS = ("schedule.refused",)
LONG_PATH = "https://hooks.example/" + "a" * (2048 - len("https://hooks.example/"))


def snapshot(db: SqliteDatabase) -> dict[str, list[tuple[Any, ...]]]:
    tables = [
        r[0]
        for r in db.connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    # Sorted here: a WITHOUT ROWID table (the running totals) has no rowid to order by.
    return {
        t: sorted((tuple(r) for r in db.connection.execute(f"SELECT * FROM {t}")), key=repr)
        for t in tables
    }


async def post_endpoint(
    browser: Browser, installation_id: str, url: str, events: tuple[str, ...]
) -> Any:
    fields = [("csrf_token", browser.csrf()), ("opened_for", "manage"), ("url", url)]
    fields += [("events", event) for event in events]
    return await browser.post_pairs(f"/installations/{installation_id}/notifications", fields)


def endpoints_on(html: str) -> list[str]:
    return re.findall(r'data-endpoint-id="([^"]+)"', html)


async def manage_page_at(world: World, installation_id: str, minutes_later: int) -> str:
    """The manage page `minutes_later`, through a new launch."""
    world.clock.advance(minutes_later * 60_000)
    installation = world.core.state.installations[installation_id]
    browser = await world.browser_for(installation, content_id=None)
    response = await browser.get(f"/installations/{installation_id}/notifications")
    assert response.status == 200
    html = response.body.decode()
    assert 'id="notifications"' in html
    return html


async def manage_of(world: World) -> tuple[Any, Browser]:
    installation = await world.install()
    browser = await world.open_page(installation, None)
    await browser.get(f"/installations/{installation.id}/notifications")
    return installation, browser


@pytest.mark.parametrize(
    ("url", "events", "status", "code"),
    [
        ("https://10.0.0.7/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://2130706433/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://127.1/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://0x7f.0.0.1/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://[::1]/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://[::ffff:169.254.169.254]/", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://hooks.example.123/x", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("http://hooks.example/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://localhost/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://intranet/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://printer.local/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://svc.internal/hook", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://user:pw@hooks.example/", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://hooks.example/a#frag", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://hooks.example/a b", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("https://hooks.example:0/", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("ftp://hooks.example/", ("schedule.refused",), 422, "invalid_endpoint_url"),
        ("", ("schedule.refused",), 422, "invalid_endpoint_url"),
        (LONG_PATH + "a", ("schedule.refused",), 422, "invalid_endpoint_url"),
        (HOOK_URL, ("schedule.published",), 422, "unknown_event"),
        (HOOK_URL, ("schedule.refused", "test"), 422, "unknown_event"),
        (HOOK_URL, (), 422, "no_events"),
    ],
)
async def test_bad_endpoint_input_is_refused_with_a_code_and_stores_nothing(
    world: World, url: str, events: tuple[str, ...], status: int, code: str
) -> None:
    installation, browser = await manage_of(world)
    before = snapshot(world.db)
    response = await post_endpoint(browser, installation.id, url, events)
    assert response.status == status
    html = response.body.decode()
    assert f'data-error-code="{code}"' in html
    assert 'data-form="notification-endpoint"' in html  # the form again, as entered
    assert snapshot(world.db) == before


async def test_a_url_of_2_kib_is_taken_and_one_byte_more_is_not(world: World) -> None:
    installation, browser = await manage_of(world)
    assert len(LONG_PATH.encode()) == 2048
    assert (
        await post_endpoint(browser, installation.id, LONG_PATH, ("schedule.refused",))
    ).status == 303


async def test_a_sixth_endpoint_is_refused(world: World) -> None:
    installation, browser = await manage_of(world)
    for i in range(5):
        await add_endpoint(browser, installation.id, f"https://hooks{i}.example/in")
    page = (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert len(endpoints_on(page)) == 5
    assert 'data-form="notification-endpoint"' not in page  # no form for a sixth
    before = snapshot(world.db)
    response = await post_endpoint(browser, installation.id, HOOK_URL, ("schedule.refused",))
    assert response.status == 409
    assert 'data-error-code="too_many_endpoints"' in response.body.decode()
    assert snapshot(world.db) == before


async def test_a_content_launch_gets_403_on_every_notification_route_and_sees_none(
    world: World,
) -> None:
    installation, manage = await manage_of(world)
    await add_endpoint(manage, installation.id)
    [endpoint_id] = endpoints_on(
        (await manage.get(f"/installations/{installation.id}/notifications")).body.decode()
    )
    editor = await world.browser_for(installation)
    page = (await editor.get(f"/installations/{installation.id}")).body.decode()
    assert "Notifications" not in page
    assert HOOK_URL not in page
    before = snapshot(world.db)
    base = f"/installations/{installation.id}/notifications"
    for path in (
        base,
        *(f"{base}/{endpoint_id}/{action}" for action in ("rotate", "delete", "test")),
    ):
        fields = [("csrf_token", editor.csrf()), ("opened_for", "cnt_en"), ("url", HOOK_URL)]
        response = await editor.post_pairs(path, [*fields, ("events", "schedule.refused")])
        assert response.status == 403, path
        assert 'data-error-code="manage_only"' in response.body.decode()
    assert snapshot(world.db) == before


async def test_forms_need_the_session_csrf_token_and_same_origin(world: World) -> None:
    installation, browser = await manage_of(world)
    before = snapshot(world.db)
    path = f"/installations/{installation.id}/notifications"
    fields = [("opened_for", "manage"), ("url", HOOK_URL), ("events", "schedule.refused")]
    assert (await browser.post_pairs(path, [("csrf_token", "x" * 43), *fields])).status == 403
    crossed = await browser.post_pairs(
        path,
        [("csrf_token", browser.csrf()), *fields],
        origin="https://evil.example",
        site="cross-site",
    )
    assert crossed.status == 403
    assert snapshot(world.db) == before


async def test_the_secret_is_shown_once_then_never_again(world: World) -> None:
    installation, browser = await manage_of(world)
    secret = await add_endpoint(browser, installation.id, HOOK_URL)
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    # A HEAD of the page uses nothing up; the next GET shows no secret.
    head = await browser._send("HEAD", f"/installations/{installation.id}", {})
    assert head.status == 200
    again = (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    assert secret not in again
    assert "data-signing-secret" not in again
    assert ANY_SECRET.findall(again.encode()) == []
    [endpoint_id] = endpoints_on(again)
    # Rotate: a new one, shown once, and the old no longer signs.
    response = await browser.post(
        f"/installations/{installation.id}/notifications/{endpoint_id}/rotate",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )
    assert response.status == 303
    shown = (await browser.follow(response)).body.decode()
    found = SECRET_VALUE.search(shown)
    assert found
    rotated = found.group(1)
    assert rotated != secret
    assert (
        rotated
        not in (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    )


async def test_deleted_endpoint_hears_nothing_more(world: World) -> None:
    receiver = Receiver()
    with_receivers(world, receiver)
    installation, browser = await manage_of(world)
    await add_endpoint(browser, installation.id)
    [endpoint_id] = endpoints_on(
        (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    )
    response = await browser.post(
        f"/installations/{installation.id}/notifications/{endpoint_id}/delete",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )
    assert response.status == 303
    assert endpoints_on((await browser.follow(response)).body.decode()) == []
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    assert receiver.received == []
    for table in ("notification_endpoints", "notification_subscriptions", "webhook_deliveries"):
        assert world.db.connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (200, "HTTP 200"),
        (500, "HTTP 500"),
        (410, "HTTP 410"),
        ("timeout", "no answer within 10 seconds"),
    ],
)
async def test_send_test_event_delivers_a_signed_test_event_at_once(
    world: World, answer: int | str, shown: str
) -> None:
    receiver = Receiver()
    network = with_receivers(world, receiver)
    installation, browser = await manage_of(world)
    secret = await add_endpoint(browser, installation.id)
    [endpoint_id] = endpoints_on(
        (await browser.get(f"/installations/{installation.id}/notifications")).body.decode()
    )
    receiver.answer_next(answer)
    sent_before = len(network.sent)
    response = await browser.post(
        f"/installations/{installation.id}/notifications/{endpoint_id}/test",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )
    assert response.status == 303
    assert len(network.sent) - sent_before == 1  # one outbound call, within the request
    [delivery] = receiver.received
    assert delivery.event["type"] == "test"
    assert delivery.event["data"]["endpoint_id"] == endpoint_id
    assert signed_by(secret, delivery)
    page = (await browser.follow(response)).body.decode()
    assert re.search(rf"data-test-result>{re.escape(shown)} at ", page)


async def test_the_page_lists_recent_deliveries_and_marks_one_failing_for_an_hour(
    world: World,
) -> None:
    receiver = Receiver(default=500)
    with_receivers(world, receiver)
    installation, browser = await manage_of(world)
    await add_endpoint(browser, installation.id)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    page = (
        await browser.get(f"/installations/{installation.id}/notifications?zone=Europe/Paris")
    ).body.decode()
    assert 'data-delivery-status="waiting"' in page
    assert "A schedule ends not done (refused)" in page
    # The event, in the chosen zone; the next try: the minute's tick after +30 s.
    assert "Wed 1 Jul 2026, 12:05:00 CEST (Europe/Paris; 10:05:00 UTC)" in page
    assert "HTTP 500" in page
    assert "Wed 1 Jul 2026, 12:06 CEST (Europe/Paris; 10:06 UTC)" in page
    assert 'data-failing="true"' not in page
    # Sessions last 30 minutes: each look an hour on is a new launch.
    assert 'data-failing="true"' not in await manage_page_at(world, installation.id, 59)
    marked = await manage_page_at(world, installation.id, 1)
    assert 'data-failing="true"' in marked
    assert "Failing for 1 h" in marked
    receiver.default = 204
    await tick_at(world, world.clock.now + 6 * 3_600_000)
    healed = await manage_page_at(world, installation.id, 0)
    assert 'data-failing="true"' not in healed
    assert 'data-delivery-status="delivered"' in healed


async def test_in_development_an_exact_dev_origin_is_taken_with_any_path(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS="http://localhost:8787")
    world = World(db, clock, env=env)
    installation, browser = await manage_of(world)
    ok = await post_endpoint(
        browser, installation.id, "http://localhost:8787/webhooks?x=1", ("schedule.refused",)
    )
    assert ok.status == 303
    for refused in ("http://localhost:8788/webhooks", "http://127.0.0.1:8787/webhooks"):
        response = await post_endpoint(browser, installation.id, refused, ("schedule.refused",))
        assert response.status == 422, refused


async def test_delete_data_removes_endpoints_and_deliveries_and_status_counts_them(
    world: World,
) -> None:
    from tests.support.app import OPERATOR, call, runner_status

    receiver = Receiver()
    with_receivers(world, receiver)
    installation, browser = await manage_of(world)
    await add_endpoint(browser, installation.id)
    s = await schedule(world, installation)
    world.core.faults.push(Fault.respond(409, "workflow_conflict"), endpoint="transitions")
    await tick_at(world, s["due_at"])
    last = (await runner_status(world.app))["last_tick"]
    assert last["webhooks"] == last["deliveries"]  # its deprecated name, for one release
    assert last["deliveries"] == {
        "events": 1,
        "sends": 1,
        "delivered": 1,
        "retrying": 0,
        "failed": 0,
        "lost_lease": 0,
        "delay_max_ms": 0,
    }
    # /admin/metrics counts them too, read as Prometheus would.
    types, samples = await scrape(world.app)
    assert types["scheduling_deliveries"] == "counter"
    assert value(samples, "scheduling_delivery_events_total") == 1
    assert value(samples, "scheduling_deliveries_total", outcome="delivered") == 1
    assert value(samples, "scheduling_deliveries_total", outcome="retrying") == 0
    # ... and under their deprecated names, the same counts, for one release.
    assert value(samples, "scheduling_webhook_events_total") == 1
    assert value(samples, "scheduling_webhook_deliveries_total", outcome="delivered") == 1
    response = await call(
        world.app, "POST", f"/admin/installations/{installation.id}/delete-data", headers=OPERATOR
    )
    assert response.status == 200
    for table in ("notification_endpoints", "notification_subscriptions", "webhook_deliveries"):
        assert world.db.connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


async def test_a_refused_endpoint_form_takes_the_focus_where_its_problem_is_said(
    world: World,
) -> None:
    """Issue 45 item 15: a refused Add endpoint came back at the top of the page, its problem
    2,000 px below. The problem takes the focus (and so the browser's scroll), as a refused
    schedule form's does; an IP address is refused saying why."""
    installation, browser = await manage_of(world)
    response = await post_endpoint(browser, installation.id, "https://127.0.0.1/hook", REFUSALS)
    assert response.status == 422
    html = response.body.decode()
    problem = re.search(r'<div class="problem"[^>]*id="endpoint-problem"[^>]*>(.*?)</div>', html)
    assert problem is not None
    assert 'tabindex="-1" autofocus' in problem.group(0)
    assert html.count("autofocus") == 1
    assert "an address may lead into the plugin&#39;s own network" in problem.group(1)


async def test_the_pages_and_the_docs_agree_on_the_secret_the_horizon_and_the_test_event(
    world: World,
) -> None:
    """Issue 45 item 15: the docs named `data-webhook-secret` (the page: `data-signing-secret`),
    the rotate page said retries went on for a day (72 h), and the docs listed a test event
    among the deliveries (it is the endpoint's Last test)."""
    docs = page_of("admins/notifications.md")
    receiver = Receiver()
    with_receivers(world, receiver)
    installation, browser = await manage_of(world)
    added = await browser.follow(await post_endpoint(browser, installation.id, HOOK_URL, REFUSALS))
    shown = added.body.decode()
    assert "data-signing-secret" in shown
    assert "`data-signing-secret`" in docs
    assert "data-webhook-secret" not in docs
    hours = GIVE_UP_AFTER_MS // 3_600_000
    assert f"last try {hours} hours after the event" in docs
    [endpoint_id] = endpoints_on(shown)
    base = f"/installations/{installation.id}/notifications/{endpoint_id}"
    rotate = (await browser.get(f"{base}/rotate")).body.decode()
    assert f"tried again for up to {hours} hours after its event" in rotate
    tested = await browser.post(
        f"{base}/test", {"csrf_token": browser.csrf(), "opened_for": "manage"}
    )
    page = (await browser.follow(tested)).body.decode()
    assert "<dt>Last test</dt>" in page
    assert "**Last test**" in docs
    assert "a test event's schedule reads" not in docs
