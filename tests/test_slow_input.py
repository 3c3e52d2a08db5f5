"""Issue 17 §1: no input makes a parser work more than linearly, through the public surface.

The JSON pre-scan used to find strings with a backtracking regex: a body of `"` followed by
`\\"` repeated never closes its string, so every quote scanned to the end (64 KB: 18 s
measured, before any authentication, with the whole server and its cron frozen). Each test
here would wait that long on the old scan; its deadline is hundreds of times what the
linear scan needs and still far below the old time, or it watches an honest send beside
the hostile input, which timed out before. The figures are the benchmark's
(`bench/parser_bench.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from scheduling.app import App
from scheduling.runtimes.cpython.asgi import AsgiApp
from scheduling.runtimes.cpython.clock import SystemClock
from scheduling.runtimes.cpython.http_client import HttpxClient
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import install
from tests.support.app import base_env, make_app
from tests.support.local_server import local_server
from tests.support.loopback_core import APPLIED, Reply, loopback_core
from tests.support.world import insert_due

# `"` then `\"` 32,000 times: 64,001 bytes, one string that never closes.
UNCLOSED = b'"' + b'\\"' * 32_000
# The old scan took 18 s on this body; the linear one about a millisecond.
DEADLINE_S = 5.0
T = TypeVar("T")


async def timed(request: Awaitable[T]) -> tuple[T, float]:
    """The answer and the seconds it took. (Measured after the fact: a blocked event loop
    cannot fire a timeout, it can only be seen to have taken long.)"""
    started = time.monotonic()
    answer = await request
    return answer, time.monotonic() - started


async def hostile_beside_honest(
    db: SqliteDatabase, reply: Callable[[dict[str, object], dict[str, str]], Reply]
) -> tuple[dict[str, int], dict[str, tuple[str, str]]]:
    """One tick sends cnt_hostile's and cnt_honest's commands, due a second ago, each of its
    own installation, to a core answering with `reply`: the report and how each schedule is."""
    with loopback_core(0.0, reply) as core:
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        app = make_app(db, SystemClock(), http=HttpxClient(), env=env)
        now = SystemClock().now_ms()
        for name in ("hostile", "honest"):
            await install(app, f"ins_{name}", base_url=core.base_url)
            await insert_due(db, f"ins_{name}", f"cnt_{name}", now - 1_000)
        report = await app.tick(now)
    rows = await db.prepare("SELECT content_id, status, result_code FROM schedules").all()
    return report, {r["content_id"]: (r["status"], r["result_code"]) for r in rows.results}


async def test_an_unclosed_string_is_refused_at_once_and_the_server_keeps_answering(
    app: App,
) -> None:
    assert len(UNCLOSED) == 64_001
    async with (
        local_server(AsgiApp(app)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client,
    ):

        async def manifest() -> tuple[httpx.Response, float]:
            await asyncio.sleep(0.05)  # sent while the activation is being read
            return await timed(client.get("/dee-wan/manifest.json"))

        (refused, activate_s), (listed, manifest_s) = await asyncio.gather(
            timed(
                client.post(
                    "/dee-wan/activate",
                    content=UNCLOSED,
                    headers={"content-type": "application/json"},
                )
            ),
            manifest(),
        )
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")
    assert listed.status_code == 200
    assert max(activate_s, manifest_s) < DEADLINE_S, (activate_s, manifest_s)


async def test_a_hostile_answer_does_not_stall_an_honest_installations_send(
    db: SqliteDatabase,
) -> None:
    """A 64 KB answer that never closes its string is one installation's problem: the
    other's command, in flight meanwhile, is completed, not timed out."""

    def reply(command: dict[str, object], headers: dict[str, str]) -> Reply:
        if command["content_id"] == "cnt_hostile":
            return Reply(200, UNCLOSED, delay_s=0.0)
        return Reply(200, json.dumps({"code": "transition_applied"}).encode(), delay_s=0.5)

    report, ended = await hostile_beside_honest(db, reply)
    assert (report["sends"], report["completed"]) == (2, 1)
    assert ended == {
        "cnt_hostile": ("refused", "untrusted_response"),
        "cnt_honest": ("completed", "transition_applied"),
    }


# -- h11's header-line regex: spaces, then a character it does not take ----------------

# A header value of spaces ending in a form feed: h11's pattern tried every way of sharing
# the spaces between its two whitespace runs (quadratic: 16 KiB took 1.6 s).
SPACES_THEN_FF = b" " * 15_500 + b"\x0c"


async def test_a_head_of_spaces_and_a_form_feed_is_refused_at_once(app: App) -> None:
    head = (
        b"GET /dee-wan/manifest.json HTTP/1.1\r\nHost: x\r\nX-Pad:" + SPACES_THEN_FF + b"\r\n\r\n"
    )
    assert len(head) <= 16 * 1024
    async with local_server(AsgiApp(app)) as port:

        async def send() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head)
            await writer.drain()
            answer = await reader.read(65536)
            writer.close()
            return answer

        # Four at once: the old pattern took them one after the other, 4 to 6 s in all here.
        answers, seconds = await timed(asyncio.gather(*(send() for _ in range(4))))
    assert all(answer.startswith(b"HTTP/1.1 400 ") for answer in answers), answers[0][:80]
    assert seconds < 2.0, seconds


async def test_an_answer_header_of_spaces_does_not_stall_an_honest_send(
    db: SqliteDatabase,
) -> None:
    """Through httpx's h11: 90 KB of spaces and a form feed in one header of a hostile
    core's answer took the old pattern about a minute, and the other installation's command,
    in flight meanwhile, timed out. Now the hostile answer is a failed exchange at once."""

    def reply(command: dict[str, object], headers: dict[str, str]) -> Reply:
        if command["content_id"] == "cnt_hostile":
            padding = (b" " * 90_000 + b"\x0c").decode("latin-1")
            return Reply(200, APPLIED, (("content-type", "application/json"), ("x-pad", padding)))
        return Reply(200, APPLIED, delay_s=0.5)

    _, ended = await hostile_beside_honest(db, reply)
    assert ended == {
        "cnt_hostile": ("retrying", "network_error"),
        "cnt_honest": ("completed", "transition_applied"),
    }
