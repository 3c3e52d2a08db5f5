"""Anonymous launch guesses (issue 17): failed launch exchanges are limited per client and
installation, past the limit a launch is 429 with `Retry-After` and Dee Wan is not called, and
a person with a real link still gets in.

Through the public surface: `GET /installations/:id?dee_wan_launch=…` on the in-process app
(the request's `client` is what a runtime's adapter reports), the local runtime's ASGI adapter
(the peer address, never a header), and the Workers adapter's binding over a stand-in object.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import uvicorn

from fake_core.state import Installation
from fake_core.transport import answered
from scheduling.failure_throttle import (
    LAUNCH_FAILURES_PER_MINUTE,
    MAX_IN_FLIGHT,
    WINDOW_MS,
    MemoryRateLimiter,
)
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.server import server_config
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from scheduling.runtimes.workers.bindings import (
    LAUNCH_LIMITER_BINDING,
    BindingRateLimiter,
    bound,
)
from tests.support.app import FakeClock
from tests.support.runtimes import LOOPBACK, Ratelimit, Runtime
from tests.support.world import Browser, World

ALICE = "203.0.113.7"
BOB = "198.51.100.23"
# The failure that finds the client over its limit is the last call that reaches Dee Wan.
MOST_CALLS = LAUNCH_FAILURES_PER_MINUTE + 1


def guess_path(installation_id: str) -> str:
    """A launch URL with a well-formed, random, never-issued code."""
    return f"/installations/{installation_id}?dee_wan_launch=dwl_{secrets.token_urlsafe(32)}"


def guess(installation: Installation) -> str:
    return guess_path(installation.id)


def real_link(world: World, installation: Installation) -> str:
    url = world.core.issue_launch(installation.id, "usr_editor", {"kind": "manage"}).url
    return url.removeprefix("https://scheduling.example")


def exchange_calls(world: World) -> int:
    return sum(1 for call in world.core.calls.calls if call.endpoint == "exchange")


def error_code(body: bytes) -> str:
    found = re.search(rb'data-error-code="([a-z_]+)"', body)
    assert found, body[:300]
    return found.group(1).decode()


async def burst(world: World, installation: Installation, client: str, count: int) -> list[Any]:
    browser = Browser(world.app, client)
    return [await browser.get(guess(installation)) for _ in range(count)]


async def test_300_guesses_reach_dee_wan_at_most_eleven_times_the_rest_429(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    async with runtime.http(client=ALICE) as alice:
        answers = [await alice.get(guess_path(installation_id)) for _ in range(300)]

    assert runtime.exchange_calls() == MOST_CALLS
    statuses = [(a.status_code, error_code(a.content)) for a in answers]
    assert statuses[:MOST_CALLS] == [(401, "launch_not_found")] * MOST_CALLS
    assert statuses[MOST_CALLS:] == [(429, "too_many_launches")] * (300 - MOST_CALLS)
    refused = answers[-1]
    assert 1 <= int(refused.headers["retry-after"]) <= 60  # 60 on the test clock, below
    assert "set-cookie" not in refused.headers
    assert "Too many launch links failed" in refused.text
    assert "dwl_" not in refused.text
    assert await runtime.count("sessions", installation_id) == 0


async def test_guesses_sent_at_once_reach_dee_wan_at_most_twelve_times(world: World) -> None:
    """A failure is known only when Dee Wan answers: in-flight exchanges are capped too."""
    core = world.http.handler

    async def slow(request: OutboundRequest) -> OutboundResponse:
        await asyncio.sleep(0.005)  # many launches in flight at once
        return await answered(core, request)

    world.http.handler = slow
    installation = await world.install()
    alice = Browser(world.app, ALICE)
    answers = list(await asyncio.gather(*(alice.get(guess(installation)) for _ in range(300))))
    for _ in range(60):  # and in waves of five
        answers += await asyncio.gather(*(alice.get(guess(installation)) for _ in range(5)))

    calls = exchange_calls(world)
    assert MOST_CALLS <= calls <= LAUNCH_FAILURES_PER_MINUTE + MAX_IN_FLIGHT
    assert sorted(a.status for a in answers) == [401] * calls + [429] * (600 - calls)
    assert {error_code(a.body) for a in answers if a.status == 429} == {"too_many_launches"}
    assert [a.header("retry-after") for a in answers[:MAX_IN_FLIGHT]] == [None] * MAX_IN_FLIGHT
    assert {a.header("retry-after") for a in answers[MAX_IN_FLIGHT:300]} == {"1"}  # at once
    assert answers[-1].header("retry-after") == "60"  # held back
    # A person's double click: both launches are exchanged.
    bob = Browser(world.app, BOB)
    links = [real_link(world, installation) for _ in range(MAX_IN_FLIGHT)]
    opened = await asyncio.gather(*(bob.get(link) for link in links))
    assert [a.status for a in opened] == [303] * MAX_IN_FLIGHT


async def test_retry_after_counts_down_and_the_same_client_gets_in_after_the_window(
    world: World,
) -> None:
    installation = await world.install()
    await burst(world, installation, ALICE, MOST_CALLS)
    alice = Browser(world.app, ALICE)

    world.clock.advance(WINDOW_MS - 1_500)
    held = await alice.get(real_link(world, installation))
    assert (held.status, held.header("retry-after")) == (429, "2")
    world.clock.advance(1_500)
    calls = exchange_calls(world)
    assert (await alice.get(real_link(world, installation))).status == 303
    assert exchange_calls(world) == calls + 1


async def test_a_held_launch_consumes_nothing_and_another_client_gets_in(
    runtime: Runtime,
) -> None:
    installation_id = await runtime.install()
    link = runtime.launch_path(installation_id)
    async with runtime.http(client=ALICE) as alice, runtime.http(client=BOB) as bob:
        for _ in range(MOST_CALLS + 5):
            await alice.get(guess_path(installation_id))
        calls = runtime.exchange_calls()
        assert (await alice.get(link)).status_code == 429
        assert runtime.exchange_calls() == calls  # Dee Wan was not asked: the code is unused

        opened = await bob.get(link)
        assert opened.status_code == 303, opened.text
        cookie = opened.headers["set-cookie"].split(";", 1)[0]
        page = await bob.get(f"/installations/{installation_id}", headers={"cookie": cookie})
        assert page.status_code == 200
    assert await runtime.count("sessions", installation_id) == 1


async def test_guesses_sent_twenty_at_a_time_are_capped_in_flight(runtime: Runtime) -> None:
    installation_id = await runtime.install()
    at_once = asyncio.Semaphore(20)
    async with runtime.http(client=ALICE) as alice:

        async def send() -> httpx.Response:
            async with at_once:
                return await alice.get(guess_path(installation_id))

        answers = list(await asyncio.gather(*(send() for _ in range(100))))
        answers += [await alice.get(guess_path(installation_id)) for _ in range(15)]

    calls = runtime.exchange_calls()
    assert MOST_CALLS <= calls <= LAUNCH_FAILURES_PER_MINUTE + MAX_IN_FLIGHT
    assert sorted(a.status_code for a in answers) == [401] * calls + [429] * (115 - calls)
    assert all(a.headers.get("retry-after") for a in answers if a.status_code == 429)
    assert int(answers[-1].headers["retry-after"]) > 1  # held back, not merely crowded


async def test_only_failed_exchanges_count(world: World) -> None:
    installation = await world.install()
    alice = Browser(world.app, ALICE)
    # Many real launches in a minute (a person opening Scheduling again and again).
    for _ in range(3 * LAUNCH_FAILURES_PER_MINUTE):
        assert (await alice.get(real_link(world, installation))).status == 303
    # Refused before any call: a malformed code, an unknown installation.
    for _ in range(3 * LAUNCH_FAILURES_PER_MINUTE):
        assert (
            await alice.get(f"/installations/{installation.id}?dee_wan_launch=dwl_x")
        ).status == 400
        assert (
            await alice.get(f"/installations/ins_nope?dee_wan_launch=dwl_{'a' * 43}")
        ).status == 404
    # As many failures as the limit allows, then a real link still opens.
    for answer in await burst(world, installation, ALICE, LAUNCH_FAILURES_PER_MINUTE):
        assert answer.status == 401
    assert (await alice.get(real_link(world, installation))).status == 303


async def test_each_installation_counts_apart(world: World) -> None:
    first = await world.install()
    second = await world.install()
    await burst(world, first, ALICE, MOST_CALLS)
    alice = Browser(world.app, ALICE)
    assert (await alice.get(real_link(world, first))).status == 429
    assert (await alice.get(real_link(world, second))).status == 303


async def test_an_ipv6_client_is_its_64_bit_prefix(world: World) -> None:
    """One host gets a /64 to itself: each of its addresses is the same client."""
    installation = await world.install()
    for index in range(MOST_CALLS):
        await Browser(world.app, f"2001:db8:1:2::{index + 1:x}").get(guess(installation))
    same_prefix = Browser(world.app, "2001:db8:1:2:ffff::9")
    assert (await same_prefix.get(real_link(world, installation))).status == 429
    other_prefix = Browser(world.app, "2001:db8:1:3::1")
    assert (await other_prefix.get(real_link(world, installation))).status == 303


@contextlib.asynccontextmanager
async def through_asgi(world: World) -> AsyncIterator[httpx.AsyncClient]:
    """Alice through the ASGI adapter: the peer address is hers."""
    transport = httpx.ASGITransport(app=AsgiApp(world.app), client=(ALICE, 50_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8788") as http:
        yield http


@contextlib.asynccontextmanager
async def through_the_local_server(world: World) -> AsyncIterator[httpx.AsyncClient]:
    """Through the local server on 127.0.0.1: uvicorn would take X-Forwarded-For from a loopback
    peer (every peer of a server on 127.0.0.1) as the client; the local server must not."""
    server = uvicorn.Server(server_config(AsgiApp(world.app), 0))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes no event for this
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            yield http
    finally:
        server.should_exit = True
        await task


@pytest.mark.parametrize("through", [through_asgi, through_the_local_server])
async def test_the_local_runtime_counts_by_peer_address_never_by_a_forwarding_header(
    world: World, through: Callable[[World], Any]
) -> None:
    installation = await world.install()
    async with through(world) as http:
        statuses = []
        for index in range(20):
            spoofed = {
                name: f"192.0.2.{index}"
                for name in ("cf-connecting-ip", "x-forwarded-for", "x-real-ip")
            }
            spoofed |= {"x-forwarded-proto": "https", "forwarded": f"for=192.0.2.{index}"}
            statuses.append((await http.get(guess(installation), headers=spoofed)).status_code)
    assert statuses == [401] * MOST_CALLS + [429] * (20 - MOST_CALLS)
    assert exchange_calls(world) == MOST_CALLS
    transport = httpx.ASGITransport(app=AsgiApp(world.app), client=(BOB, 50_000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8788") as bob:
        assert (await bob.get(real_link(world, installation))).status_code == 303


# -- the Workers binding, as the adapter sees it --------------------------------------------


def test_the_binding_is_found_by_name_and_shape() -> None:
    env = SimpleNamespace()
    assert bound(env, LAUNCH_LIMITER_BINDING) is None
    setattr(env, LAUNCH_LIMITER_BINDING, "not a binding")
    assert bound(env, LAUNCH_LIMITER_BINDING) is None
    binding = Ratelimit(3)
    setattr(env, LAUNCH_LIMITER_BINDING, binding)
    assert bound(env, LAUNCH_LIMITER_BINDING) is binding


async def test_with_a_binding_its_limit_counts_and_only_failures_reach_it(
    runtime: Runtime,
) -> None:
    """Its keys name the installation and the client, no one else; under Pyodide the binding
    is the harness's `Ratelimit`, converted by the SDK as workerd's is."""
    installation_id = await runtime.install()
    key = f"launch:{installation_id}:{ALICE}"
    with runtime.launch_limiter(3) as limiter:
        async with runtime.http(client=ALICE) as alice:
            # A person launching again and again is never counted.
            for _ in range(5):
                link = runtime.launch_path(installation_id)
                assert (await alice.get(link)).status_code == 303
            answers = [await alice.get(guess_path(installation_id)) for _ in range(50)]
            assert [a.status_code for a in answers] == [401] * 4 + [429] * 46
            assert runtime.exchange_calls() == 5 + 4
            said = [True, True, True, False]
            assert limiter.calls() == [{"key": key, "success": s} for s in said]

            # The binding's window ends, but this isolate holds Alice back for its own minute.
            limiter.end_window()
            assert (await alice.get(guess_path(installation_id))).status_code == 429
            assert len(limiter.calls()) == 4
        # Another client gets in; where no test names the client, the peer's address counts.
        async with runtime.http(client=BOB) as bob:
            link = runtime.launch_path(installation_id)
            assert (await bob.get(link)).status_code == 303
        async with runtime.http() as anyone:
            assert (await anyone.get(guess_path(installation_id))).status_code == 401
        peer = f"launch:{installation_id}:{LOOPBACK}"
        assert limiter.calls()[-1] == {"key": peer, "success": True}


async def test_a_failing_binding_falls_back_to_the_isolates_own_count(
    db: SqliteDatabase, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        async def limit(self, options: dict[str, str]) -> dict[str, bool]:
            raise RuntimeError("binding unavailable")

    world = World(db, clock)
    fallback = MemoryRateLimiter(LAUNCH_FAILURES_PER_MINUTE, WINDOW_MS, clock)
    world.app.services.rate_limiter = BindingRateLimiter(Broken(), fallback)
    installation = await world.install()
    with caplog.at_level(logging.WARNING, logger="scheduling"):
        answers = await burst(world, installation, ALICE, 20)
    assert [a.status for a in answers] == [401] * MOST_CALLS + [429] * (20 - MOST_CALLS)
    assert "LAUNCH_LIMITER" in caplog.text
    assert ALICE not in caplog.text
