"""fake_core enforces protocol v1 (§4–§7): every refusal row, idempotency, pins, the §6
transition command applied to a whole translation group.

Each test would fail if the check it names were removed from fake_core.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from fake_core import FakeCore, Installation, MockTransport, core_handler, parse_rfc3339, rfc3339
from fake_core.testing import encode, sample_core, transition_command
from scheduling.ports import (
    LimitReached,
    OutboundRequest,
    OutboundResponse,
    TransportError,
    TransportTimeout,
)

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0
API = "https://cms.example/api/plugins/v1"
PATH = "/api/plugins/v1/transitions"


@pytest.fixture
def core() -> FakeCore:
    return sample_core(T0)


@pytest.fixture
def ins(core: FakeCore) -> Installation:
    return core.register_installation(models={"article"})


@pytest.fixture
def http(core: FakeCore) -> MockTransport:
    return MockTransport(core_handler(core))


def body_of(response: OutboundResponse) -> dict[str, Any]:
    data = json.loads(response.body)
    assert isinstance(data, dict)
    return data


async def send(
    http: MockTransport,
    method: str,
    path: str,
    *,
    token: str | None,
    json_body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> OutboundResponse:
    all_headers = {"Content-Type": "application/json"}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    all_headers.update(headers or {})
    body = (
        raw if raw is not None else (None if json_body is None else json.dumps(json_body).encode())
    )
    return await http.send(OutboundRequest(method, f"{API}{path}", all_headers, body))


async def expect(response: Any, status: int, code: str) -> dict[str, Any]:
    response = await response
    assert (response.status, body_of(response)["code"]) == (status, code)
    assert response.headers["content-type"] == "application/json"
    return body_of(response)


# -- §4 launch exchange ------------------------------------------------------


async def exchange(http: MockTransport, token: str | None, code: Any) -> OutboundResponse:
    return await send(http, "POST", "/launch/exchange", token=token, json_body={"code": code})


@pytest.mark.parametrize(
    "context", [{"kind": "content", "content_id": "cnt_fr"}, {"kind": "manage"}]
)
async def test_exchange_answers_person_context_and_a_30_minute_delegation(
    core: FakeCore, ins: Installation, http: MockTransport, context: dict[str, str]
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", context)
    data = await expect(exchange(http, ins.token, launch.code), 200, "launch_exchanged")
    delegation = data.pop("delegation")
    assert data == {
        "code": "launch_exchanged",
        "installation_id": ins.id,
        "person": {"id": "usr_editor", "name": "Ada Lovelace"},
        "context": context,
    }
    assert delegation["token"].startswith("dwd_")
    assert len(delegation["token"]) == 47
    assert delegation["expires_at"] == "2026-07-01T09:30:00Z"


async def test_launch_url_follows_the_manifest_template(core: FakeCore, ins: Installation) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    assert launch.url == (
        f"https://scheduling.example/installations/{ins.id}?dee_wan_launch={launch.code}"
    )
    assert launch.code.startswith("dwl_")
    assert len(launch.code) == 47


async def test_launch_code_is_single_use(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    await expect(exchange(http, ins.token, launch.code), 200, "launch_exchanged")
    await expect(exchange(http, ins.token, launch.code), 404, "launch_not_found")


@pytest.mark.parametrize(("after_ms", "status"), [(59_999, 200), (60_000, 404)])
async def test_launch_code_expires_after_60_seconds(
    core: FakeCore, ins: Installation, http: MockTransport, after_ms: int, status: int
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    core.clock.advance(after_ms)
    response = await exchange(http, ins.token, launch.code)
    assert response.status == status


async def test_launch_code_of_another_installation_is_not_found_and_not_consumed(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    other = core.register_installation()
    launch = core.issue_launch(other.id, "usr_editor", {"kind": "manage"})
    await expect(exchange(http, ins.token, launch.code), 404, "launch_not_found")
    await expect(exchange(http, other.token, launch.code), 200, "launch_exchanged")


async def test_unknown_launch_code_is_not_found(ins: Installation, http: MockTransport) -> None:
    await expect(exchange(http, ins.token, "dwl_" + "A" * 43), 404, "launch_not_found")


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        b"{}",
        b'{"code": "dwl_short"}',
        b'{"code": "dwa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}',
        b'{"code": 12}',
        b'{"code": "dwl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "x": 1}',
    ],
)
async def test_malformed_exchange_is_invalid_request(
    ins: Installation, http: MockTransport, raw: bytes
) -> None:
    await expect(
        send(http, "POST", "/launch/exchange", token=ins.token, raw=raw), 400, "invalid_request"
    )


async def test_exchange_needs_a_json_content_type(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    response = send(
        http,
        "POST",
        "/launch/exchange",
        token=ins.token,
        json_body={"code": launch.code},
        headers={"Content-Type": "text/plain"},
    )
    await expect(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer dwp_" + "A" * 43, "Basic abc", "Bearer", "Bearer dwp_short"],
)
async def test_exchange_without_a_current_token_is_unauthorized(
    core: FakeCore, ins: Installation, http: MockTransport, authorization: str | None
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    headers = {} if authorization is None else {"Authorization": authorization}
    response = send(
        http,
        "POST",
        "/launch/exchange",
        token=None,
        json_body={"code": launch.code},
        headers=headers,
    )
    await expect(response, 401, "plugin_unauthorized")
    assert not core.state.launches[launch.code].used


# -- §5 content read -----------------------------------------------------------


async def delegation_for(
    core: FakeCore, ins: Installation, http: MockTransport, person: str = "usr_editor"
) -> str:
    launch = core.issue_launch(ins.id, person, {"kind": "content", "content_id": "cnt_en"})
    token = body_of(await exchange(http, ins.token, launch.code))["delegation"]["token"]
    assert isinstance(token, str)
    return token


async def read(
    http: MockTransport, ins: Installation, content_id: str, delegation: str | None
) -> OutboundResponse:
    headers = {} if delegation is None else {"Dee-Wan-Delegation": delegation}
    return await send(http, "GET", f"/content/{content_id}", token=ins.token, headers=headers)


async def test_content_read_answers_the_spec_shape(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    core.state.publish_now("cnt_en", T0)
    version = core.state.edit("cnt_en")
    delegation = await delegation_for(core, ins, http)
    data = await expect(read(http, ins, "cnt_fr", delegation), 200, "content")
    assert data == {
        "code": "content",
        "content": {
            "id": "cnt_fr",
            "primary_id": "cnt_en",
            "title": "Lancement",
            "model": "article",
            "locale": "fr",
            "current_version_id": version,
            "published_version_id": "ver_1",
        },
        "workflow": {
            "revision": 2,
            "transitions": [
                {"kind": "publish", "to": "published"},
                {"kind": "unpublish", "to": "draft"},
            ],
        },
        "site": {"timezone": "Europe/Paris"},
    }


@pytest.mark.parametrize(
    ("content_id", "person", "capabilities", "kinds"),
    [
        ("cnt_en", "usr_editor", None, ["publish"]),  # nothing published yet
        ("cnt_pub", "usr_editor", None, ["unpublish"]),  # current is published
        ("cnt_pub", "usr_viewer", None, []),  # person may do nothing
        ("cnt_en", "usr_editor", {"content:read", "workflow:unpublish"}, []),  # not granted
    ],
)
async def test_transitions_intersect_person_capabilities_and_state(
    core: FakeCore,
    http: MockTransport,
    content_id: str,
    person: str,
    capabilities: set[str] | None,
    kinds: list[str],
) -> None:
    ins = core.register_installation(
        capabilities=capabilities or {"content:read", "workflow:publish", "workflow:unpublish"}
    )
    delegation = await delegation_for(core, ins, http, person)
    data = body_of(await read(http, ins, content_id, delegation))
    assert [t["kind"] for t in data["workflow"]["transitions"]] == kinds
    published = core.state.groups[content_id].published_version_id
    assert data["content"]["published_version_id"] == published


async def test_content_read_refusals(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    delegation = await delegation_for(core, ins, http)
    await expect(read(http, ins, "cnt_en", None), 403, "requester_unauthorized")
    await expect(read(http, ins, "cnt_en", "dwd_" + "A" * 43), 403, "requester_unauthorized")
    await expect(read(http, ins, "cnt_page", delegation), 403, "capability_refused")
    await expect(read(http, ins, "cnt_nope", delegation), 404, "content_not_found")
    blind = await delegation_for(core, ins, http, "usr_blind")
    await expect(read(http, ins, "cnt_en", blind), 403, "requester_unauthorized")
    bad = send(
        http,
        "GET",
        "/content/cnt_en",
        token="dwp_" + "B" * 43,
        headers={"Dee-Wan-Delegation": delegation},
    )
    await expect(bad, 401, "plugin_unauthorized")


async def test_delegation_expires_after_30_minutes(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    delegation = await delegation_for(core, ins, http)
    core.clock.advance(30 * 60 * 1000 - 1)
    await expect(read(http, ins, "cnt_en", delegation), 200, "content")
    core.clock.advance(1)
    await expect(read(http, ins, "cnt_en", delegation), 403, "requester_unauthorized")


async def test_delegation_of_another_installation_is_refused(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    other = core.register_installation()
    delegation = await delegation_for(core, other, http)
    await expect(read(http, ins, "cnt_en", delegation), 403, "requester_unauthorized")


async def test_content_read_needs_the_content_read_capability(
    core: FakeCore, http: MockTransport
) -> None:
    ins = core.register_installation(capabilities={"workflow:publish"})
    delegation = await delegation_for(core, ins, http)
    await expect(read(http, ins, "cnt_en", delegation), 403, "capability_refused")


# -- transport -------------------------------------------------------------------


async def test_transport_refuses_unknown_hosts(http: MockTransport) -> None:
    with pytest.raises(TransportError):
        await http.send(OutboundRequest("GET", "https://evil.example/api/plugins/v1/content/x", {}))


async def test_the_mock_transport_keeps_the_ports_promises() -> None:
    """What a real adapter does, whatever the handler answers: the body cut at the request's
    limit, header names in lower case, no answer past the timeout, and a request the
    platform refused never counted as sent."""
    long = MockTransport(lambda _: OutboundResponse(200, {"X-Long": "1"}, b"x" * 10))
    answer = await long.send(OutboundRequest("GET", "https://a.example/", {}, max_body_bytes=4))
    assert (answer.headers, answer.body, answer.truncated) == ({"x-long": "1"}, b"xxxx", True)

    async def silent(request: OutboundRequest) -> OutboundResponse:
        await asyncio.sleep(60)
        raise AssertionError("answered")

    with pytest.raises(TransportTimeout):
        await MockTransport(silent).send(
            OutboundRequest("GET", "https://a.example/", {}, None, 0.01)
        )

    def refused(request: OutboundRequest) -> OutboundResponse:
        raise LimitReached("subrequests")

    limited = MockTransport(refused)
    with pytest.raises(LimitReached):
        await limited.send(OutboundRequest("GET", "https://a.example/", {}))
    assert (len(long.sent), limited.sent) == (1, [])


async def test_unknown_route_and_wrong_method(ins: Installation, http: MockTransport) -> None:
    await expect(send(http, "GET", "/nope", token=ins.token), 404, "not_found")
    await expect(send(http, "GET", "/transitions", token=ins.token), 405, "method_not_allowed")


def test_wire_time_format() -> None:
    assert rfc3339(T0 + 999) == "2026-07-01T09:00:00Z"
    for bad in ("2026-07-01T09:00:00+00:00", "2026-07-01T09:00:00.000Z", "2026-13-01T09:00:00Z"):
        assert parse_rfc3339(bad) is None


# -- the Manage launch is a site admin's ------------------------------------------------


async def test_a_manage_launch_of_someone_no_longer_admin_is_not_found(
    core: FakeCore, ins: Installation, http: MockTransport
) -> None:
    launch = core.issue_launch(ins.id, "usr_editor", {"kind": "manage"})
    core.state.persons["usr_editor"].role = "editor"  # demoted before the plugin exchanged it
    await expect(exchange(http, ins.token, launch.code), 404, "launch_not_found")
    assert not core.state.launches[launch.code].used
    assert core.state.delegations == {}
    core.state.persons["usr_editor"].role = "admin"
    await expect(exchange(http, ins.token, launch.code), 200, "launch_exchanged")


def test_a_person_has_one_of_the_known_roles(core: FakeCore) -> None:
    with pytest.raises(ValueError, match="role must be one of admin, editor, viewer"):
        core.state.add_person("usr_x", "X", role="owner")


# -- §6 the transition command --------------------------------------------------------


async def post(core: FakeCore, headers: dict[str, str], body: Any) -> tuple[int, str]:
    raw = body if isinstance(body, bytes) else encode(body)
    status, response_headers, answer = await core.handle("POST", PATH, headers, raw)
    assert response_headers["content-type"] == "application/json"
    return status, json.loads(answer)["code"]


async def test_publish_applies_to_the_whole_translation_group(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins, "cnt_en", "publish")
    assert await post(core, headers, body) == (200, "transition_applied")
    group = core.state.groups["cnt_en"]
    assert group.published_version_id == group.current_version_id
    assert group.revision == 2
    assert core.state.group_of("cnt_fr") is group  # the translation is published with it
    [entry] = core.state.log
    assert (entry.kind, entry.idempotency_key, entry.requested_by) == (
        "publish",
        headers["Idempotency-Key"],
        "usr_editor",
    )


async def test_unpublish_clears_the_published_version(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins, "cnt_pub", "unpublish")
    assert await post(core, headers, body) == (200, "transition_applied")
    assert core.state.groups["cnt_pub"].published_version_id is None


async def test_same_key_same_body_is_a_replay_and_applies_nothing(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, body) == (200, "transition_applied")
    assert await post(core, headers, body) == (200, "idempotent_replay")
    assert len(core.state.log) == 1
    assert core.state.groups["cnt_en"].revision == 2


async def test_a_replay_is_answered_from_memory_even_after_the_right_was_lost(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, body) == (200, "transition_applied")
    core.state.persons["usr_editor"].transitions = frozenset()
    assert await post(core, headers, body) == (200, "idempotent_replay")
    fresh_headers, fresh_body = transition_command(core, ins, schedule_id="sch_2")
    assert await post(core, fresh_headers, fresh_body) == (403, "requester_unauthorized")


async def test_same_key_different_body_is_key_reuse(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, body) == (200, "transition_applied")
    changed = {**body, "due_at": "2026-07-01T14:00:00Z"}
    assert await post(core, headers, changed) == (409, "idempotency_key_reused")
    assert len(core.state.log) == 1


async def test_idempotency_survives_rotation(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, body) == (200, "transition_applied")
    ins.token = "dwp_" + "R" * 43  # what a rotation does to the record
    headers["Authorization"] = f"Bearer {ins.token}"
    assert await post(core, headers, body) == (200, "idempotent_replay")


@pytest.mark.parametrize(
    ("change", "logged"),
    [
        (lambda state: state.edit("cnt_en"), []),  # a new version
        (lambda state: state.bump_revision("cnt_en"), []),  # a new workflow revision
        (lambda state: state.publish_now("cnt_en", T0), ["core"]),  # published by hand in core
    ],
    ids=["new-version", "new-revision", "manual-publish"],
)
async def test_a_change_in_core_since_scheduling_makes_it_stale(
    core: FakeCore, ins: Installation, change: Any, logged: list[str]
) -> None:
    headers, body = transition_command(core, ins)
    change(core.state)
    assert await post(core, headers, body) == (409, "scheduled_target_stale")
    assert [entry.source for entry in core.state.log] == logged


async def test_unpublish_pin_is_the_published_version(core: FakeCore, ins: Installation) -> None:
    current = core.state.groups["cnt_pub"].current_version_id
    core.state.edit("cnt_pub")  # current moves on; the published version is the pin
    headers, body = transition_command(core, ins, "cnt_pub", "unpublish")
    assert body["version_id"] == current
    wrong = {**body, "version_id": core.state.groups["cnt_pub"].current_version_id}
    assert await post(core, headers, wrong) == (409, "scheduled_target_stale")
    assert await post(core, headers, body) == (200, "transition_applied")


@pytest.mark.parametrize(
    ("content_id", "kind", "override"),
    [
        ("cnt_pub", "publish", {}),  # current version already published
        ("cnt_en", "unpublish", {"version_id": "ver_1"}),  # nothing published
        ("cnt_en", "publish", {"to": "draft"}),  # `to` does not match the kind
        ("cnt_en", "publish", {"to": "archived"}),
    ],
)
async def test_unavailable_transitions(
    core: FakeCore, ins: Installation, content_id: str, kind: str, override: dict[str, Any]
) -> None:
    headers, body = transition_command(core, ins, content_id, kind, **override)
    assert await post(core, headers, body) == (422, "transition_unavailable")
    assert core.state.log == []


async def test_translation_id_is_invalid(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins, "cnt_fr")
    assert await post(core, headers, body) == (400, "invalid_request")


def _without(name: str) -> Any:
    return lambda body: {k: v for k, v in body.items() if k != name}


@pytest.mark.parametrize(
    "mangle",
    [
        _without("content_id"),
        _without("due_at"),
        _without("requested_by"),
        lambda body: {**body, "extra": 1},
        lambda body: {**body, "workflow_revision": "1"},
        lambda body: {**body, "workflow_revision": True},
        lambda body: {**body, "workflow_revision": 1.0},
        lambda body: {**body, "workflow_revision": -1},
        lambda body: {**body, "kind": "archive"},
        lambda body: {**body, "version_id": None},
        lambda body: {**body, "content_id": 7},
        lambda body: {**body, "due_at": "2026-07-01T13:00:00+00:00"},
        lambda body: {**body, "due_at": "2026-07-01T13:00:00.000Z"},
        lambda body: {**body, "due_at": "2026-07-01 13:00:00Z"},
        lambda body: b"not json",
        lambda body: [body],
    ],
)
async def test_malformed_bodies_are_invalid(core: FakeCore, ins: Installation, mangle: Any) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, mangle(body)) == (400, "invalid_request")


@pytest.mark.parametrize(
    "key",
    [
        None,
        "",
        "sched:{ins}:sch_1",
        "sched:{ins}:sch_1:r0",
        "sched:{ins}:sch_1:r01",
        "sched:{ins}:sch_1:1",
        "sched:{ins}:sch 1:r1",
        "sched:ins_other:sch_1:r1",  # another installation's id
        "SCHED:{ins}:sch_1:r1",
    ],
)
async def test_idempotency_key_must_have_the_shape_and_this_installation(
    core: FakeCore, ins: Installation, key: str | None
) -> None:
    headers, body = transition_command(core, ins)
    if key is None:
        del headers["Idempotency-Key"]
    else:
        headers["Idempotency-Key"] = key.format(ins=ins.id)
    assert await post(core, headers, body) == (400, "invalid_request")


async def test_json_content_type_is_required(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    headers["Content-Type"] = "text/plain"
    assert await post(core, headers, body) == (400, "invalid_request")


async def test_header_names_are_case_insensitive(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    lowered = {k.lower(): v for k, v in headers.items()}
    assert await post(core, lowered, body) == (200, "transition_applied")


@pytest.mark.parametrize(
    ("capabilities", "kind", "content_id"),
    [
        ({"content:read", "workflow:unpublish"}, "publish", "cnt_en"),
        ({"content:read", "workflow:publish"}, "unpublish", "cnt_pub"),
        ({"content:read", "workflow:publish"}, "publish", "cnt_page"),  # a model not granted
    ],
)
async def test_kind_and_model_need_their_grant(
    core: FakeCore, capabilities: set[str], kind: str, content_id: str
) -> None:
    ins = core.register_installation(capabilities=capabilities, models={"article"})
    headers, body = transition_command(core, ins, content_id, kind)
    assert await post(core, headers, body) == (403, "capability_refused")


async def test_unknown_content_is_not_found(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, {**body, "content_id": "cnt_gone"}) == (
        404,
        "content_not_found",
    )


@pytest.mark.parametrize("person", ["usr_viewer", "usr_nobody", "usr_editor"])
async def test_requester_must_be_allowed_when_it_runs(
    core: FakeCore, ins: Installation, person: str
) -> None:
    headers, body = transition_command(core, ins, requested_by=person)
    core.state.persons["usr_editor"].transitions = frozenset({"unpublish"})  # lost since
    assert await post(core, headers, body) == (403, "requester_unauthorized")


@pytest.mark.parametrize(
    "authorization", [None, "Bearer dwp_" + "Z" * 43, "Bearer not-a-token", "Token x"]
)
async def test_wrong_token_is_unauthorized(
    core: FakeCore, ins: Installation, authorization: str | None
) -> None:
    headers, body = transition_command(core, ins)
    del headers["Authorization"]
    if authorization:
        headers["Authorization"] = authorization
    assert await post(core, headers, body) == (401, "plugin_unauthorized")


async def test_uninstalled_installation_is_unauthorized_everywhere(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    core.uninstall(ins.id)
    assert await post(core, headers, body) == (401, "plugin_unauthorized")
    for method, path in [
        ("GET", "/api/plugins/v1/content/cnt_en"),
        ("POST", "/api/plugins/v1/launch/exchange"),
    ]:
        status, _, answer = await core.handle(method, path, headers, b"{}")
        assert (status, json.loads(answer)["code"]) == (401, "plugin_unauthorized")
    assert core.state.log == []
