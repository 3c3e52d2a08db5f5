"""Protocol v1 §4 (launch exchange) and §5 (content read), enforced.

Each function gets an already-authenticated installation; authentication
itself (§ conventions, §7) lives in `authenticate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fake_core.clock import rfc3339
from fake_core.state import (
    CAPABILITY,
    KINDS,
    TARGET,
    CoreState,
    Delegation,
    Group,
    Installation,
    Person,
)
from fake_core.wire import (
    Reply,
    bearer,
    error,
    has_shape,
    header,
    is_json_content_type,
    json_reply,
    new_secret,
    parse_json_object,
    same_secret,
)

DELEGATION_MS = 30 * 60 * 1000


def authenticate(state: CoreState, headers: Mapping[str, str]) -> Installation | None:
    """The installation whose *current* token this is; revoked ones never match."""
    token = bearer(headers)
    if token is None or not has_shape("installation_token", token):
        return None
    for installation in state.installations.values():
        if not installation.revoked and same_secret(token, installation.token):
            return installation
    return None


def exchange(
    state: CoreState,
    now_ms: int,
    installation: Installation,
    headers: Mapping[str, str],
    body: bytes | None,
) -> Reply:
    data = parse_json_object(body)
    if (
        data is None
        or not is_json_content_type(headers)
        or set(data) != {"code"}
        or not has_shape("launch_code", data["code"])
    ):
        return error(400, "invalid_request")
    launch = state.launches.get(data["code"])
    if (
        launch is None
        or launch.used
        or now_ms >= launch.expires_at_ms
        or launch.installation_id != installation.id
    ):
        return error(404, "launch_not_found")
    person = state.persons[launch.person_id]
    if launch.context.get("kind") == "manage" and not person.is_admin:
        # No longer a site admin since the launch was issued: Dee Wan would not have
        # offered it now, and §4 has one answer for a launch that cannot be used.
        return error(404, "launch_not_found")
    launch.used = True  # single use, even if the answer never arrives
    delegation = new_secret("dwd_")
    expires_at_ms = (now_ms // 1000) * 1000 + DELEGATION_MS  # whole seconds on the wire
    state.delegations[delegation] = Delegation(
        delegation, installation.id, person.id, expires_at_ms
    )
    return json_reply(
        200,
        {
            "code": "launch_exchanged",
            "installation_id": installation.id,
            "person": {"id": person.id, "name": person.name},
            "context": dict(launch.context),
            "delegation": {"token": delegation, "expires_at": rfc3339(expires_at_ms)},
        },
    )


def read_content(
    state: CoreState,
    now_ms: int,
    installation: Installation,
    headers: Mapping[str, str],
    content_id: str,
) -> Reply:
    person = delegated_person(state, now_ms, installation, headers)
    if person is None:
        return error(403, "requester_unauthorized")
    if "content:read" not in installation.capabilities:
        return error(403, "capability_refused")
    if not person.can_read:
        return error(403, "requester_unauthorized")
    item = state.contents.get(content_id)
    if item is None:
        return error(404, "content_not_found")
    if not installation.may_act_on(item.model):
        return error(403, "capability_refused")
    group = state.groups[item.primary_id]
    return json_reply(
        200,
        {
            "code": "content",
            "content": {
                "id": item.id,
                "primary_id": item.primary_id,
                "title": item.title,
                "model": item.model,
                "locale": item.locale,
                "current_version_id": group.current_version_id,
                "published_version_id": group.published_version_id,
            },
            "workflow": {
                "revision": group.revision,
                "transitions": available_transitions(person, installation, group),
            },
            "site": {"timezone": state.site.timezone},
        },
    )


def delegated_person(
    state: CoreState, now_ms: int, installation: Installation, headers: Mapping[str, str]
) -> Person | None:
    token = header(headers, "dee-wan-delegation")
    if token is None or not has_shape("delegation_token", token):
        return None
    delegation = state.delegations.get(token)
    if (
        delegation is None
        or delegation.installation_id != installation.id
        or now_ms >= delegation.expires_at_ms
    ):
        return None
    return state.persons.get(delegation.person_id)


def available_transitions(
    person: Person, installation: Installation, group: Group
) -> list[dict[str, Any]]:
    """What this person may do now: their rights ∩ granted capabilities ∩ state."""
    possible = {
        "publish": group.current_version_id != group.published_version_id,
        "unpublish": group.published_version_id is not None,
    }
    return [
        {"kind": kind, "to": TARGET[kind]}
        for kind in KINDS
        if possible[kind]
        and kind in person.transitions
        and CAPABILITY[kind] in installation.capabilities
    ]
