"""fake_core failure injection and call record, seen through the in-process transport."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from fake_core import (
    FakeCore,
    Fault,
    FaultContext,
    Installation,
    MockTransport,
    RandomFaults,
    core_handler,
    http_date,
    parse_rfc3339,
)
from fake_core.testing import encode, sample_core, transition_command
from scheduling.ports import OutboundRequest, OutboundResponse, TransportError, TransportTimeout

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0
URL = "https://cms.example/api/plugins/v1/transitions"


@pytest.fixture
def core() -> FakeCore:
    return sample_core(T0)


@pytest.fixture
def ins(core: FakeCore) -> Installation:
    return core.register_installation()


@pytest.fixture
def http(core: FakeCore) -> MockTransport:
    return MockTransport(core_handler(core))


async def send_command(
    core: FakeCore,
    http: MockTransport,
    ins: Installation,
    content_id: str = "cnt_en",
    kind: str = "publish",
    timeout_s: float = 10.0,
) -> OutboundResponse:
    headers, body = transition_command(core, ins, content_id, kind)
    return await http.send(OutboundRequest("POST", URL, headers, encode(body), timeout_s))


def code_of(response: OutboundResponse) -> str:
    code = json.loads(response.body)["code"]
    assert isinstance(code, str)
    return code


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (503, "unavailable"),
        (500, "oops"),
        (429, "rate_limited"),
        (200, "content_not_found"),
        (409, "transition_applied"),
        (403, "capability_refused"),
    ],
)
async def test_faked_responses_apply_nothing(
    core: FakeCore, http: MockTransport, ins: Installation, status: int, code: str
) -> None:
    core.faults.push(Fault.respond(status, code))
    response = await send_command(core, http, ins)
    assert (response.status, code_of(response)) == (status, code)
    assert core.state.log == []
    [call] = core.calls.calls
    assert (call.status, call.code, call.applied) == (status, code, False)
    assert call.fault == Fault.respond(status, code)
    # The fault is consumed: the retry goes through.
    assert code_of(await send_command(core, http, ins)) == "transition_applied"


@pytest.mark.parametrize("retry_after", [120, http_date(T0 + 60_000)])
async def test_retry_after_header(
    core: FakeCore, http: MockTransport, ins: Installation, retry_after: int | str
) -> None:
    core.faults.push(Fault.respond(429, "rate_limited", retry_after=retry_after))
    response = await send_command(core, http, ins)
    assert response.headers["retry-after"] == str(retry_after)
    assert http_date(T0 + 60_000) == "Wed, 01 Jul 2026 09:01:00 GMT"


async def test_body_without_code(core: FakeCore, http: MockTransport, ins: Installation) -> None:
    core.faults.push(Fault.respond(200, None))
    response = await send_command(core, http, ins)
    assert json.loads(response.body) == {}


async def test_timeout_raises_and_applies_nothing(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    core.faults.push(Fault.timeout())
    with pytest.raises(TransportTimeout):
        await send_command(core, http, ins)
    assert core.state.log == []
    [call] = core.calls.calls
    assert (call.status, call.outcome, call.applied) == (None, "timed_out", False)


async def test_apply_then_drop_applies_and_the_retry_is_a_replay(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    core.faults.push(Fault.apply_then_drop())
    request = OutboundRequest("POST", URL, headers, encode(body))
    with pytest.raises(TransportError) as caught:
        await http.send(request)
    assert not isinstance(caught.value, TransportTimeout)
    assert len(core.state.log) == 1
    assert code_of(await http.send(request)) == "idempotent_replay"
    assert len(core.state.log) == 1
    first, second = core.calls.calls
    assert (first.applied, first.outcome, first.status) == (True, "dropped", None)
    assert (second.applied, second.code) == (False, "idempotent_replay")
    assert first.header("idempotency-key") == second.header("Idempotency-Key")


async def test_delay_holds_the_answer(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    core.faults.push(Fault.delay(0.05))
    started = time.monotonic()
    response = await send_command(core, http, ins)
    assert time.monotonic() - started >= 0.05
    assert code_of(response) == "transition_applied"


async def test_delay_past_the_client_timeout_applied_anyway(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    core.faults.push(Fault.delay(5))
    with pytest.raises(TransportTimeout):
        await send_command(core, http, ins, timeout_s=0.02)
    assert len(core.state.log) == 1
    assert core.calls.calls[0].outcome == "client_gave_up"


async def test_latency_applies_to_every_transition_call(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    core.faults.set_latency(0.03)
    core.faults.push(Fault.respond(503, "unavailable"))
    started = time.monotonic()
    assert (await send_command(core, http, ins)).status == 503
    assert (await send_command(core, http, ins)).status == 200
    assert time.monotonic() - started >= 0.06
    assert [c.fault.delay_s if c.fault else 0 for c in core.calls.calls] == [0.03, 0.03]


async def test_bad_json(core: FakeCore, http: MockTransport, ins: Installation) -> None:
    core.faults.push(Fault.bad_json())
    response = await send_command(core, http, ins)
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    with pytest.raises(ValueError):  # noqa: PT011 — any JSON decode error
        json.loads(response.body)
    assert core.state.log == []


async def test_redirect(core: FakeCore, http: MockTransport, ins: Installation) -> None:
    core.faults.push(Fault.redirect(307, "https://elsewhere.example/x"))
    response = await send_command(core, http, ins)
    assert (response.status, response.headers["location"]) == (307, "https://elsewhere.example/x")
    assert core.state.log == []


async def test_html_5xx(core: FakeCore, http: MockTransport, ins: Installation) -> None:
    core.faults.push(Fault.html_5xx(502))
    response = await send_command(core, http, ins)
    assert response.status == 502
    assert response.headers["content-type"] == "text/html"
    assert response.body.startswith(b"<html>")
    assert core.state.log == []


async def test_faults_target_endpoint_and_content_in_order(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    faults = core.faults
    faults.push(Fault.respond(503, "a"), content_id="cnt_pub")
    faults.push(Fault.respond(404, "b"), endpoint="content")
    faults.push(Fault.respond(500, "c"), times=2)
    assert code_of(await send_command(core, http, ins)) == "c"
    assert code_of(await send_command(core, http, ins, "cnt_pub", "unpublish")) == "a"
    assert code_of(await send_command(core, http, ins)) == "c"
    assert code_of(await send_command(core, http, ins)) == "transition_applied"
    assert [entry["endpoint"] for entry in faults.pending()] == ["content"]


async def test_exchange_faults_consume_the_launch_code_only_when_processed(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    core = core
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    request = OutboundRequest(
        "POST",
        "https://cms.example/api/plugins/v1/launch/exchange",
        {"Authorization": f"Bearer {ins.token}", "Content-Type": "application/json"},
        encode({"code": launch.code}),
    )
    core.faults.push(Fault.respond(503, "unavailable"), endpoint="exchange")
    assert (await http.send(request)).status == 503
    core.faults.push(Fault.apply_then_drop(), endpoint="exchange")
    with pytest.raises(TransportError):
        await http.send(request)
    assert code_of(await http.send(request)) == "launch_not_found"  # used by the dropped call


async def test_content_read_fault(core: FakeCore, http: MockTransport, ins: Installation) -> None:
    core.faults.push(Fault.timeout(), endpoint="content", content_id="cnt_en")
    request = OutboundRequest(
        "GET",
        "https://cms.example/api/plugins/v1/content/cnt_en",
        {"Authorization": f"Bearer {ins.token}"},
    )
    with pytest.raises(TransportTimeout):
        await http.send(request)
    assert (await http.send(request)).status == 403  # no delegation: really processed


async def test_random_policy_is_deterministic_per_seed(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    def draw(seed: str) -> list[str]:
        policy = RandomFaults(seed, rate=0.5)
        context = FaultContext(1, "transitions", "POST", "/x", None)
        return [str(policy(context)) for _ in range(30)]

    assert draw("soak") == draw("soak")
    assert draw("soak") != draw("other")
    assert "None" in draw("soak")
    assert len(set(draw("soak"))) > 3
    core.faults.policy = RandomFaults("soak", rate=1.0, choices=[Fault.respond(503, "x")])
    assert (await send_command(core, http, ins)).status == 503


def test_fault_json_round_trip() -> None:
    for fault in (
        Fault.respond(429, "slow", retry_after=3, delay_s=0.5),
        Fault.timeout(),
        Fault.redirect(),
        Fault.html_5xx(),
        Fault.bad_json(),
        Fault.apply_then_drop(),
    ):
        assert Fault.from_json(fault.to_json()) == fault
    with pytest.raises(ValueError, match="kind"):
        Fault.from_json({"kind": "explode"})


async def test_call_record_keeps_what_was_sent(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    await http.send(OutboundRequest("POST", URL, headers, encode(body)))
    [call] = core.calls.of("transitions")
    assert call.method == "POST"
    assert call.path == "/api/plugins/v1/transitions"
    assert call.headers == headers  # as received, names and all
    assert call.header("authorization") == f"Bearer {ins.token}"
    assert call.body == body
    assert (call.status, call.code, call.applied, call.fault) == (
        200,
        "transition_applied",
        True,
        None,
    )
    assert call.at_ms == T0
    assert call.to_json()["headers"]["Idempotency-Key"] == headers["Idempotency-Key"]


async def test_concurrent_duplicates_apply_once(
    core: FakeCore, http: MockTransport, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    request = OutboundRequest("POST", URL, headers, encode(body))
    core.faults.set_latency(0.01)
    responses = await asyncio.gather(*(http.send(request) for _ in range(5)))
    assert sorted(code_of(r) for r in responses) == ["idempotent_replay"] * 4 + [
        "transition_applied"
    ]
    assert len(core.state.log) == 1
