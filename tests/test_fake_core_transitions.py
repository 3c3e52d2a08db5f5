"""fake_core's §6 transition command: refusals, idempotency, pins, translation groups."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_core import FakeCore, Installation, parse_rfc3339
from fake_core.testing import encode, sample_core, transition_command

T0 = parse_rfc3339("2026-07-01T09:00:00Z") or 0
PATH = "/api/plugins/v1/transitions"


@pytest.fixture
def core() -> FakeCore:
    return sample_core(T0)


@pytest.fixture
def ins(core: FakeCore) -> Installation:
    return core.register_installation(models={"article"})


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


async def test_a_new_version_since_scheduling_is_stale(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    core.state.edit("cnt_en")
    assert await post(core, headers, body) == (409, "scheduled_target_stale")
    assert core.state.log == []


async def test_a_new_workflow_revision_is_stale(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    core.state.bump_revision("cnt_en")
    assert await post(core, headers, body) == (409, "scheduled_target_stale")


async def test_unpublish_pin_is_the_published_version(core: FakeCore, ins: Installation) -> None:
    current = core.state.groups["cnt_pub"].current_version_id
    core.state.edit("cnt_pub")  # current moves on; the published version is the pin
    headers, body = transition_command(core, ins, "cnt_pub", "unpublish")
    assert body["version_id"] == current
    wrong = {**body, "version_id": core.state.groups["cnt_pub"].current_version_id}
    assert await post(core, headers, wrong) == (409, "scheduled_target_stale")
    assert await post(core, headers, body) == (200, "transition_applied")


async def test_manual_publish_in_core_makes_a_schedule_stale(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    core.state.publish_now("cnt_en", T0)
    assert await post(core, headers, body) == (409, "scheduled_target_stale")
    assert [entry.source for entry in core.state.log] == ["core"]


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
    ],
)
async def test_kind_needs_its_capability(
    core: FakeCore, capabilities: set[str], kind: str, content_id: str
) -> None:
    ins = core.register_installation(capabilities=capabilities)
    headers, body = transition_command(core, ins, content_id, kind)
    assert await post(core, headers, body) == (403, "capability_refused")


async def test_model_must_be_granted(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins, "cnt_page")
    assert await post(core, headers, body) == (403, "capability_refused")


async def test_unknown_content_is_not_found(core: FakeCore, ins: Installation) -> None:
    headers, body = transition_command(core, ins)
    assert await post(core, headers, {**body, "content_id": "cnt_gone"}) == (
        404,
        "content_not_found",
    )


@pytest.mark.parametrize("person", ["usr_viewer", "usr_nobody"])
async def test_requester_must_be_allowed(core: FakeCore, ins: Installation, person: str) -> None:
    headers, body = transition_command(core, ins, requested_by=person)
    assert await post(core, headers, body) == (403, "requester_unauthorized")


async def test_requester_losing_the_right_is_refused_at_execution(
    core: FakeCore, ins: Installation
) -> None:
    headers, body = transition_command(core, ins)
    core.state.persons["usr_editor"].transitions = frozenset({"unpublish"})
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
