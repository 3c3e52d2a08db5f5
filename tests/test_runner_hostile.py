"""One tenant's broken core never touches another's schedules.

Each test gives one installation's Dee Wan a hostile answer and, in the same
tick, an honest schedule of another installation: the tick stays green, the
honest one is sent exactly once and completed, and the hostile one ends in
exactly one settle.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_core import Fault
from fake_core.transport import answered
from scheduling import dee_wan
from scheduling.domain.outcomes import parse_retry_after
from scheduling.ports import OutboundRequest, OutboundResponse
from tests.support.world import World, attempts, row, schedule, sends, tick_at

HOSTILE_CONTENT = "cnt_en"
HONEST_CONTENT = "cnt_page"


async def tick_with_one_hostile_answer(
    world: World, fault: Fault
) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    hostile = await schedule(world, await world.install(), HOSTILE_CONTENT)
    honest = await schedule(world, await world.install(), HONEST_CONTENT)
    world.core.faults.push(fault, endpoint="transitions", content_id=HOSTILE_CONTENT)
    report = await tick_at(world, hostile["due_at"])  # raises if the tick failed
    assert len(sends(world, honest)) == 1
    assert (await row(world, honest["id"]))["status"] == "completed"
    assert report["claimed"] == 2
    assert report["completed"] >= 1
    assert report["completed"] + report["refused"] + report["retrying"] == 2  # one settle each
    return await row(world, hostile["id"]), hostile, report


RETRY_AFTERS = {
    "5,000 digits": "9" * 5000,
    "superscript two": "²",
    "full-width digits": "１２",
    "eleven digits": "12345678901",
    "negative": "-5",
    "a date in year 99999": "Mon, 01 Jan 99999 00:00:00 GMT",
    "not a date": "Mon, 32 Foo 2026 25:61:61 GMT",
    "non-ASCII date": "Mon, 01 Jan 2026 00:00:00 GMT\u00e9",
}


@pytest.mark.parametrize("value", RETRY_AFTERS.values(), ids=RETRY_AFTERS.keys())
async def test_an_unusable_retry_after_backs_off_as_for_a_5xx(world: World, value: str) -> None:
    settled, hostile, _ = await tick_with_one_hostile_answer(
        world, Fault.respond(429, "slow_down", retry_after=value)
    )
    assert (settled["status"], settled["result_code"]) == ("retrying", "slow_down")
    assert 7_500 <= settled["next_attempt_at"] - hostile["due_at"] <= 15_000  # the first backoff


def test_retry_after_is_ascii_digits_or_an_http_date() -> None:
    assert parse_retry_after("120", now_ms=0) == 120_000
    assert parse_retry_after(" 9999999999 ", now_ms=0) == 9_999_999_999_000
    assert parse_retry_after("Thu, 01 Jan 1970 00:01:00 GMT", now_ms=0) == 60_000
    for value in RETRY_AFTERS.values():
        assert parse_retry_after(value, now_ms=0) is None


BIG_BUT_VALID = json.dumps({"code": "transition_applied", "pad": "x" * (64 << 10)}).encode()
BODIES = {
    "nested 20,000 deep": b"[" * 20_000 + b"]" * 20_000,
    "nested objects": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    "over 64 KiB": BIG_BUT_VALID,
    "code is a number": b'{"code": 200}',
    "code is a list": b'{"code": ["transition_applied"]}',
    "code with a NUL": b'{"code": "transition_applied\\u0000"}',
    "not UTF-8": b'{"code": "transition_applied\xff"}',
    "a JSON string": b'"transition_applied"',
    "empty": b"",
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
async def test_a_hostile_success_body_is_untrusted(world: World, body: bytes) -> None:
    settled, hostile, _ = await tick_with_one_hostile_answer(
        world, Fault.respond(200, None, body=body)
    )
    assert (settled["status"], settled["result_code"]) == ("refused", "untrusted_response")
    [attempt] = await attempts(world, hostile["id"])
    assert (attempt["code"], attempt["http_status"]) == ("untrusted_response", 200)


async def test_an_oversized_error_page_is_untrusted_not_retried(world: World) -> None:
    page = b"<html>" + b"busy " * 20_000 + b"</html>"
    settled, _, _ = await tick_with_one_hostile_answer(world, Fault.respond(503, None, body=page))
    assert (settled["status"], settled["result_code"]) == ("refused", "untrusted_response")


@pytest.mark.parametrize("code", ["<script>alert(1)</script>", "A" * 65, "Ünavailable"])
async def test_a_5xx_code_that_does_not_look_like_one_is_not_stored(
    world: World, code: str
) -> None:
    body = json.dumps({"code": code}).encode()
    settled, hostile, _ = await tick_with_one_hostile_answer(
        world, Fault.respond(503, None, body=body)
    )
    assert (settled["status"], settled["result_code"]) == ("retrying", "server_error")
    [attempt] = await attempts(world, hostile["id"])
    assert attempt["code"] == "server_error"


async def test_an_adapter_that_raises_is_a_transport_failure_for_that_claim_only(
    world: World,
) -> None:
    hostile = await schedule(world, await world.install(), HOSTILE_CONTENT)
    honest = await schedule(world, await world.install(), HONEST_CONTENT)
    core = world.http.handler

    async def broken(request: OutboundRequest) -> OutboundResponse:
        """An adapter that breaks its contract for the hostile installation's requests."""
        if request.body and f'"{HOSTILE_CONTENT}"'.encode() in request.body:
            raise ValueError("an adapter bug")
        return await answered(core, request)

    world.http.handler = broken
    report = await tick_at(world, hostile["due_at"])
    assert (report["completed"], report["retrying"]) == (1, 1)
    assert (await row(world, hostile["id"]))["result_code"] == "network_error"
    assert (await row(world, honest["id"]))["status"] == "completed"


async def test_a_classifier_that_raises_makes_that_answer_untrusted(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = dee_wan.classify

    def fragile(answer: Any, *, now_ms: int) -> Any:
        if isinstance(answer, OutboundResponse) and answer.status == 418:
            raise RecursionError("a bug we did not foresee")
        return real(answer, now_ms=now_ms)

    monkeypatch.setattr(dee_wan, "classify", fragile)
    settled, _, _ = await tick_with_one_hostile_answer(world, Fault.respond(418, "teapot"))
    assert (settled["status"], settled["result_code"]) == ("refused", "untrusted_response")
