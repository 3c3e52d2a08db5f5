"""A Dee Wan answer no parser reads in more than linear work, beside an honest one.

A body of `"` followed by `\\"` repeated never closes its string: a backtracking pre-scan
spent 18 s on 64 KB of it, with the whole process frozen. Here it is one installation's
answer while another's command is in flight: that one is completed, not timed out. (The
same body sent to the plugin is refused on both runtimes: tests/test_input_rules.py; the
figures are the benchmark's, `bench/parser_bench.py`.)
"""

from __future__ import annotations

import json
from collections.abc import Callable

from scheduling.runtimes.cpython.adapters import HttpxClient, SystemClock
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase
from tests.support.activation import install
from tests.support.app import base_env, make_app
from tests.support.loopback_core import Reply, loopback_core
from tests.support.world import insert_due

# `"` then `\"` 32,000 times: 64,001 bytes, one string that never closes.
UNCLOSED = b'"' + b'\\"' * 32_000


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
