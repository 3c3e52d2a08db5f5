"""Fuzz: arbitrary Dee Wan answers to the transition command, through a real tick.

Each example adds two due schedules: one core answers what hypothesis makes, the other is an
honest fake_core. The tick never fails, every claimed row ends settled with code-like codes,
and the honest schedule is sent once and completed. Derandomized, a fixed budget.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_core.transport import answered
from scheduling.ports import OutboundRequest, OutboundResponse
from scheduling.runtimes.cpython.sqlite_d1 import SqliteDatabase, apply_migrations
from tests.support.app import FakeClock
from tests.support.fuzzing import FUZZ, weighted
from tests.support.world import MINUTE, World, bulk_due, sends

EXAMPLES = 400
CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
HOSTILE = "hostile"


class Stage:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.db = SqliteDatabase(":memory:")
        apply_migrations(self.db.connection)
        self.world = World(self.db, FakeClock())
        self.answer: OutboundResponse | None = None  # the current example's
        core = self.world.http.handler

        async def scripted(request: OutboundRequest) -> OutboundResponse:
            if request.body and f'"{HOSTILE}'.encode() in request.body and self.answer:
                return self.answer  # to the hostile installation's commands
            return await answered(core, request)

        self.world.http.handler = scripted
        self.hostile = self.loop.run_until_complete(self.world.install())
        self.honest = self.loop.run_until_complete(self.world.install())
        self.examples = 0

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)


@pytest.fixture(scope="module")
def stage() -> Iterator[Stage]:
    made = Stage()
    yield made
    made.loop.close()
    made.db.close()


codes = weighted(
    (
        3,
        st.sampled_from(
            [
                "transition_applied",
                "idempotent_replay",
                "invalid_request",
                "plugin_unauthorized",
                "capability_refused",
                "scheduled_target_stale",
                "transition_refused",
                "busy",
            ]
        ),
    ),
    (2, st.text(max_size=70)),
    (1, st.integers() | st.none() | st.lists(st.text(max_size=3), max_size=2)),
)
json_bodies = st.builds(
    lambda code, extra: json.dumps({"code": code, **extra}).encode(),
    codes,
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
bodies = weighted(
    (6, json_bodies),
    (1, st.binary(max_size=300)),
    (1, st.integers(1, 40_000).map(lambda depth: b"[" * depth + b"]" * depth)),
    (
        1,
        st.integers(60_000, 70_000).map(
            lambda n: json.dumps({"code": "transition_applied", "x": "y" * n}).encode()
        ),
    ),
)
retry_afters = weighted(
    (2, st.none()),
    (2, st.integers(0, 10**12).map(str)),
    (1, st.text(max_size=30)),
    (
        2,
        st.sampled_from(
            [
                "Thu, 01 Jan 1970 00:00:00 GMT",
                "Mon, 01 Jan 99999 00:00:00 GMT",
                "²",
                "１２",
                "9" * 5000,
            ]
        ),
    ),
)
statuses = weighted(
    (6, st.sampled_from([200, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504, 301])),
    (1, st.integers(100, 599)),
)


@st.composite
def answers(draw: st.DrawFn) -> OutboundResponse:
    headers = {"content-type": "application/json"}
    retry_after = draw(retry_afters)
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return OutboundResponse(draw(statuses), headers, draw(bodies))


def test_arbitrary_transition_answers_never_fail_a_tick_or_touch_another_installation(
    stage: Stage,
) -> None:
    @settings(FUZZ, max_examples=EXAMPLES)
    @given(answers())
    def one(answer: OutboundResponse) -> None:
        stage.examples += 1
        n = stage.examples
        world = stage.world
        due = world.clock.now_ms() + MINUTE
        stage.run(bulk_due(world, stage.hostile, 1, due, f"{HOSTILE}{n}_"))
        stage.run(bulk_due(world, stage.honest, 1, due, f"honest{n}_"))
        stage.answer = answer
        world.clock.now = due
        report = stage.run(world.app.tick(due))  # raises if the tick failed

        ended = ("completed", "refused", "retrying", "refused_unsent_late")
        assert report["claimed"] == sum(report[outcome] for outcome in ended)
        unsettled = stage.run(
            world.db.prepare(
                "SELECT (SELECT count(*) FROM schedules WHERE status = 'running') AS running,"
                " (SELECT count(*) FROM schedule_attempts WHERE finished_at IS NULL) AS open"
            ).first()
        )
        assert unsettled == {"running": 0, "open": 0}
        hostile = stage.run(
            world.db.prepare("SELECT status, result_code FROM schedules WHERE id = ?")
            .bind(f"sch_{HOSTILE}{n}_0")
            .first()
        )
        assert hostile is not None
        assert CODE.fullmatch(hostile["result_code"] or "")
        honest_key = f"sched:{stage.honest.id}:sch_honest{n}_0:r1"
        honest = stage.run(
            world.db.prepare("SELECT status FROM schedules WHERE idempotency_key = ?")
            .bind(honest_key)
            .first()
        )
        assert honest == {"status": "completed"}
        assert len(sends(world, {"idempotency_key": honest_key})) == 1

    one()
