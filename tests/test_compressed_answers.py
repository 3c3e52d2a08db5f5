"""Issue 17 §4: a Dee Wan that answers compressed is read the same on both runtimes.

Every request asks for `accept-encoding: identity`; a core that compresses anyway is decoded
as Workers' fetch decodes it, with the size limit applied to the decoded bytes and memory
bounded whatever the compressed body expands to. Real HTTP on loopback, real ticks.
(The Worker's side is in test_pyodide_input.py.)
"""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from scheduling.dee_wan import TRANSITION_ANSWER_LIMIT_BYTES
from scheduling.runtimes.cpython.adapters import HttpxClient, SystemClock
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import install
from tests.support.app import base_env, make_app
from tests.support.compressed import CASES, encoded
from tests.support.loopback_core import APPLIED, Loopback, Reply, loopback_core
from tests.support.world import insert_due


def padded(size: int) -> bytes:
    """`{"code":"transition_applied"}` padded with spaces to exactly `size` bytes."""
    return APPLIED[:-1] + b" " * (size - len(APPLIED)) + b"}"


async def tick_against(
    db: SqliteDatabase, reply: Callable[[dict[str, Any], dict[str, str]], Reply]
) -> tuple[dict[str, Any], Loopback]:
    """One due schedule, one tick against a loopback core answering with `reply`; returns
    the schedule's row and the core (what it was sent)."""
    with loopback_core(0.0, reply) as core:
        env = base_env(ENVIRONMENT="development", DEE_WAN_DEV_ORIGINS=core.base_url)
        http = HttpxClient()
        app = make_app(db, SystemClock(), http=http, env=env)
        await install(app, "ins_zip", base_url=core.base_url)
        now = SystemClock().now_ms()
        await insert_due(db, "ins_zip", "cnt_zip", now - 1_000)
        await app.tick(now)
        await http.aclose()
    row = await db.prepare("SELECT status, result_code FROM schedules").first()
    assert row is not None
    return row, core


@pytest.mark.parametrize(("name", "answer", "expected"), CASES, ids=[case[0] for case in CASES])
async def test_a_compressed_answer_is_read_as_a_worker_reads_it(
    db: SqliteDatabase, name: str, answer: Reply, expected: tuple[str, str]
) -> None:
    row, core = await tick_against(db, lambda command, headers: answer)
    assert (row["status"], row["result_code"]) == expected
    assert [h.get("accept-encoding") for h in core.headers] == ["identity"]


@pytest.mark.parametrize(
    ("past_it", "expected"),
    [(0, ("completed", "transition_applied")), (1, ("refused", "untrusted_response"))],
)
async def test_the_limit_applies_to_the_decoded_answer(
    db: SqliteDatabase, past_it: int, expected: tuple[str, str]
) -> None:
    """64 KiB of answer compresses to a few hundred bytes: it is the 64 KiB that count."""
    answer = gzip.compress(padded(TRANSITION_ANSWER_LIMIT_BYTES + past_it))
    row, _ = await tick_against(db, lambda c, h: encoded(answer, "gzip"))
    assert (row["status"], row["result_code"]) == expected


async def test_a_compression_bomb_is_cut_at_the_limit_in_bounded_memory(
    db: SqliteDatabase,
) -> None:
    """200 MB of spaces gzip to about 200 KB. Only the limit's worth is ever decoded."""
    bomb = gzip.compress(APPLIED[:-1] + b" " * 200_000_000 + b"}", compresslevel=9)
    tracemalloc.start()
    try:
        row, _ = await tick_against(db, lambda c, h: encoded(bomb, "gzip"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (row["status"], row["result_code"]) == ("refused", "untrusted_response")
    assert peak < 16 * 1024 * 1024, peak  # decoded whole, it would be 200 MB


async def test_an_encoding_it_cannot_decode_is_not_trusted(db: SqliteDatabase) -> None:
    """Brotli (which a Worker's fetch would decode) is not read here: no JSON, no trust."""
    row, _ = await tick_against(db, lambda c, h: encoded(APPLIED, "br"))
    assert (row["status"], row["result_code"]) == ("refused", "untrusted_response")
