"""Calls a visitor can make that cost someone else (issue 26, items 1 and 3; issue 37, item 1):
"Send test event" is one at a time and five a minute per person of an installation, and an
installation holds at most a share of the visitors' pool, in a pool of connections apart from Dee
Wan's and the runner's; a create (which reads Dee Wan) is at most MAX_CREATES_PER_MINUTE a
person. Beyond either: 429 with `Retry-After`, nothing sent or read, and the form kept.

Through the public surface: the manage and content pages' forms on the in-process app with
the fake Dee Wan; the pools with real sockets, a receiver that never answers and a core on
loopback.
"""

from __future__ import annotations

import asyncio
import html
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fake_core.transport import MockTransport
from scheduling.actions.access import ENDPOINT_CALLS
from scheduling.limits import VISITOR_CALLS_PER_INSTALLATION, VISITOR_CONNECTIONS
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.adapters import SystemClock, outbound_client
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import install
from tests.support.app import FakeClock, base_env, make_app
from tests.support.loopback_core import loopback_core
from tests.support.runtimes import Runtime, Visitor
from tests.support.webhooks import add_endpoint
from tests.support.world import MINUTE, Browser, World, insert_due, local

WINDOW_S = 60


def hanging(world: World, *, released: bool = False) -> tuple[MockTransport, asyncio.Event]:
    """The visitors' pool, its calls to endpoints that answer (204) once the event is set."""
    release = asyncio.Event()
    if released:
        release.set()

    async def endpoint(request: OutboundRequest) -> OutboundResponse:
        await release.wait()
        return OutboundResponse(204, {}, b"")

    pool = MockTransport(endpoint)
    world.app.services.visitor_http = pool
    return pool, release


async def endpoints(world: World, count: int) -> tuple[str, Browser, list[str]]:
    installation = await world.install()
    browser = await world.browser_for(installation, content_id=None)
    for n in range(count):
        await add_endpoint(browser, installation.id, f"https://hooks{n}.example/scheduling")
    rows = world.db.connection.execute(
        "SELECT id FROM notification_endpoints ORDER BY url"
    ).fetchall()
    await browser.get(f"/installations/{installation.id}/notifications")
    return installation.id, browser, [row[0] for row in rows]


async def send_test(browser: Browser, installation_id: str, endpoint_id: str) -> Any:
    return await browser.post(
        f"/installations/{installation_id}/notifications/{endpoint_id}/test",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )


def kept_form(page: str) -> dict[str, str]:
    """The fields of the form a refusal page keeps (`data-resend`)."""
    form = page.split("data-resend", 1)[1].split("</form>", 1)[0]
    found = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)
    return {name: html.unescape(value) for name, value in found}


async def test_one_test_event_at_a_time_per_person(world: World) -> None:
    pool, release = hanging(world)
    installation_id, browser, [first, second] = await endpoints(world, 2)
    under_way = asyncio.create_task(send_test(browser, installation_id, first))
    while not pool.sent:  # noqa: ASYNC110 - waiting for the call to leave
        await asyncio.sleep(0)
    # Answered at once (without the limit it would wait on the endpoint with the first), to
    # either endpoint: the budget is the person's.
    for endpoint_id in (first, second):
        refused = await asyncio.wait_for(send_test(browser, installation_id, endpoint_id), 5)
        assert refused.status == 429
        page = refused.body.decode()
        assert 'data-error-code="too_many_tests"' in page
        hold_s = ENDPOINT_CALLS.hold_ms // 1000
        assert refused.header("retry-after") == str(hold_s)
        assert f"Wait {hold_s} seconds" in page
        assert kept_form(page) == {"csrf_token": browser.csrf(), "opened_for": "manage"}
    assert len(pool.sent) == 1  # neither was sent
    # Another person of the installation is not held back.
    other_person = await admin(world, installation_id, "usr_second")
    other = asyncio.create_task(send_test(other_person, installation_id, second))
    while len(pool.sent) < 2:  # noqa: ASYNC110
        await asyncio.sleep(0)
    release.set()
    assert (await under_way).status == (await other).status == 303
    assert (await send_test(browser, installation_id, first)).status == 303  # ended: free again


async def admin(world: World, installation_id: str, person_id: str) -> Browser:
    """Another site admin of the installation, its manage page opened."""
    world.core.state.add_person(person_id, person_id, role="admin")
    installation = world.core.state.installations[installation_id]
    browser = await world.browser_for(installation, person=person_id, content_id=None)
    await browser.get(f"/installations/{installation_id}/notifications")
    return browser


async def test_an_endpoint_deleted_and_added_again_does_not_renew_the_test_events(
    world: World,
) -> None:
    """Issue 37, item 1: the five a minute were the endpoint id's, and a manager renewed
    them by deleting the endpoint and adding it again."""
    pool, _ = hanging(world, released=True)
    installation_id, browser, [endpoint_id] = await endpoints(world, 1)
    for _ in range(ENDPOINT_CALLS.per_minute):
        assert (await send_test(browser, installation_id, endpoint_id)).status == 303
    deleted = await browser.post(
        f"/installations/{installation_id}/notifications/{endpoint_id}/delete",
        {"csrf_token": browser.csrf(), "opened_for": "manage"},
    )
    assert deleted.status == 303
    await add_endpoint(browser, installation_id, "https://hooks0.example/scheduling")
    [renewed] = [
        row[0] for row in world.db.connection.execute("SELECT id FROM notification_endpoints")
    ]
    assert renewed != endpoint_id
    await browser.get(f"/installations/{installation_id}/notifications")
    refused = await send_test(browser, installation_id, renewed)
    assert refused.status == 429
    assert 'data-error-code="too_many_tests"' in refused.body.decode()
    assert len(pool.sent) == ENDPOINT_CALLS.per_minute


async def test_one_installation_holds_a_share_of_the_visitors_pool_another_is_not_held(
    world: World,
) -> None:
    """Issue 37, item 1: with receivers that never answer, one installation's persons held
    every connection of the visitors' pool and another installation's test waited."""
    pool, release = hanging(world)
    installation_id, first, [endpoint_id] = await endpoints(world, 1)
    persons = [first]
    for n in range(VISITOR_CALLS_PER_INSTALLATION):
        persons.append(await admin(world, installation_id, f"usr_admin{n}"))
    under_way = []
    for person in persons[:VISITOR_CALLS_PER_INSTALLATION]:
        under_way.append(asyncio.create_task(send_test(person, installation_id, endpoint_id)))
        while len(pool.sent) < len(under_way):  # noqa: ASYNC110
            await asyncio.sleep(0)
    refused = await asyncio.wait_for(send_test(persons[-1], installation_id, endpoint_id), 5)
    assert refused.status == 429
    assert 'data-error-code="too_many_tests"' in refused.body.decode()
    assert len(pool.sent) == VISITOR_CALLS_PER_INSTALLATION
    assert VISITOR_CALLS_PER_INSTALLATION < VISITOR_CONNECTIONS
    # Another installation's test leaves at once.
    other_id, other, _ = await endpoints(world, 0)
    await add_endpoint(other, other_id, "https://elsewhere.example/scheduling")
    [other_endpoint] = [
        row[0]
        for row in world.db.connection.execute(
            "SELECT id FROM notification_endpoints WHERE installation_id = ?", (other_id,)
        )
    ]
    await other.get(f"/installations/{other_id}")
    elsewhere = asyncio.create_task(send_test(other, other_id, other_endpoint))
    while len(pool.sent) <= VISITOR_CALLS_PER_INSTALLATION:  # noqa: ASYNC110
        await asyncio.sleep(0)
    assert pool.sent[-1].url == "https://elsewhere.example/scheduling"
    release.set()
    assert [(await call).status for call in [*under_way, elsewhere]] == [303] * (
        VISITOR_CALLS_PER_INSTALLATION + 1
    )
    # The refused call was not counted: the person may send once the others have ended.
    assert (await send_test(persons[-1], installation_id, endpoint_id)).status == 303


async def test_five_test_events_a_minute_per_endpoint_then_429_until_the_minute_passes(
    world: World, clock: FakeClock
) -> None:
    pool, _ = hanging(world, released=True)
    installation_id, browser, [endpoint_id] = await endpoints(world, 1)
    for _ in range(ENDPOINT_CALLS.per_minute):
        assert (await send_test(browser, installation_id, endpoint_id)).status == 303
        clock.advance(1_000)
    refused = await send_test(browser, installation_id, endpoint_id)
    assert refused.status == 429
    # The first of the five leaves the minute 60 s after it was sent, 5 s ago.
    assert refused.header("retry-after") == str(WINDOW_S - ENDPOINT_CALLS.per_minute)
    assert len(pool.sent) == ENDPOINT_CALLS.per_minute
    clock.advance((WINDOW_S - ENDPOINT_CALLS.per_minute) * 1000)
    assert (await send_test(browser, installation_id, endpoint_id)).status == 303
    assert len(pool.sent) == ENDPOINT_CALLS.per_minute + 1


async def test_a_test_event_goes_out_through_the_visitors_pool(world: World) -> None:
    pool, _ = hanging(world, released=True)
    installation_id, browser, [endpoint_id] = await endpoints(world, 1)
    dee_wan_calls = len(world.core.calls.calls)
    assert (await send_test(browser, installation_id, endpoint_id)).status == 303
    assert [request.url for request in pool.sent] == ["https://hooks0.example/scheduling"]
    assert len(world.core.calls.calls) == dee_wan_calls  # nothing through Dee Wan's port


@pytest.fixture
def silent_receiver() -> Iterator[int]:
    """A port that takes connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        yield int(sock.getsockname()[1])


async def test_calls_visitors_hold_do_not_keep_a_due_send_waiting(
    db: SqliteDatabase, silent_receiver: int
) -> None:
    """With every connection of the visitors' pool held by a receiver that never answers,
    a due send to Dee Wan leaves at once: its pool is another."""
    main = outbound_client(max_connections=2, public_only=False)
    visitors = outbound_client(max_connections=2, public_only=False)
    with loopback_core(0.05) as core:
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        app = make_app(db, SystemClock(), http=main, env=env)
        app.services.visitor_http = visitors
        await install(app, "ins_due", base_url=core.base_url)
        now = SystemClock().now_ms()
        await insert_due(db, "ins_due", "cnt_due", now - 1_000)
        hook = OutboundRequest("POST", f"http://127.0.0.1:{silent_receiver}/hook", {}, b"{}", 10)
        held = [asyncio.create_task(app.services.http_for_visitors.send(hook)) for _ in range(8)]
        await asyncio.sleep(0.3)  # the pool's two connections are taken, six calls wait
        started = time.monotonic()
        report = await app.tick(now)
        took = time.monotonic() - started
        for call in held:
            call.cancel()
        await asyncio.gather(*held, return_exceptions=True)
    await main.aclose()
    await visitors.aclose()
    assert (report["sends"], report["completed"]) == (1, 1)
    assert took < 3, f"the due send waited {took:.1f} s"


# -- creates: at most MAX_CREATES_PER_MINUTE a person ---------------------------------------


def create_form(browser: Browser, due_ms: int) -> dict[str, str]:
    return {
        "csrf_token": browser.csrf(),
        **browser.shown(),
        "transition": "publish:published",
        "local_time": local(due_ms),
        "timezone": "UTC",
        "fold": "",
    }


def visitor_form(visitor: Visitor, due_ms: int) -> dict[str, str]:
    return {"csrf_token": visitor.csrf, **visitor.shown, "transition": "publish:published",
            "local_time": local(due_ms), "timezone": "UTC", "fold": ""}  # fmt: skip


async def test_past_the_creates_of_a_minute_a_create_is_429_with_the_form_kept(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    path = f"/installations/{installation_id}/schedules"
    due = runtime.minute_ahead(30)
    with runtime.vars(MAX_CREATES_PER_MINUTE="2"):
        browser = await runtime.open_page(installation_id, content_id=runtime.content)
        for n in range(2):
            made = await browser.post_form(path, visitor_form(browser, due + n * MINUTE))
            assert made.status_code == 303, made.text
            await browser.get(made.headers["location"])
        form = visitor_form(browser, due + 9 * MINUTE)
        refused = await browser.post_form(path, form)
    assert refused.status_code == 429
    assert 0 < int(refused.headers["retry-after"]) <= WINDOW_S
    assert 'data-error-code="too_many_creates"' in refused.text
    assert kept_form(refused.text) == {**form, "opened_for": runtime.content}  # as entered
    assert await runtime.count("schedules", installation_id) == 2


async def test_past_the_creates_of_a_minute_dee_wan_is_not_read_and_others_are_not_held(
    db: SqliteDatabase, clock: FakeClock
) -> None:
    """And a minute later the kept form, sent again as it was, is taken."""
    world = World(db, clock, env=base_env(MAX_CREATES_PER_MINUTE="1"))
    installation = await world.install()
    browser = await world.open_page(installation)
    path = f"/installations/{installation.id}/schedules"
    due = (clock.now_ms() // MINUTE + 10) * MINUTE
    await browser.follow(await browser.post(path, create_form(browser, due)))
    reads = len(world.core.calls.of("content"))
    refused = await browser.post(path, create_form(browser, due + MINUTE))
    assert (refused.status, refused.header("retry-after")) == (429, str(WINDOW_S))
    assert len(world.core.calls.of("content")) == reads  # Dee Wan was not read
    world.core.state.add_person("usr_second", "Grace Hopper", {"publish", "unpublish"})
    other = await world.open_page(installation, person="usr_second")
    assert (await other.post(path, create_form(other, due + 20 * MINUTE))).status == 303
    clock.advance(WINDOW_S * 1000)
    again = await browser.post(path, kept_form(refused.body.decode()))
    assert again.status == 303, again.body[:300]


async def test_creates_default_to_30_a_minute(db: SqliteDatabase, clock: FakeClock) -> None:
    world = World(db, clock)
    assert world.app.services.config.max_creates_per_minute == 30
    installation = await world.install()
    browser = await world.open_page(installation)
    path = f"/installations/{installation.id}/schedules"
    due = (clock.now_ms() // MINUTE + 10) * MINUTE
    statuses = [(await browser.post(path, create_form(browser, due))).status for _ in range(31)]
    assert statuses == [303] * 30 + [429]
