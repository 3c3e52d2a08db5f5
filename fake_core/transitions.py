"""Protocol v1 §6: the transition command, with every check core makes.

Order: request shape, then idempotency — a key already applied is answered
from memory, like any idempotent API, so a retry after a lost answer is never
judged by the effects of its own first delivery or by permissions changed
since — then capability, content, primary id, requester authority, workflow
revision, state and pin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fake_core.clock import parse_rfc3339
from fake_core.state import CAPABILITY, KINDS, TARGET, CoreState, Installation, Remembered
from fake_core.wire import (
    Reply,
    error,
    header,
    is_id,
    is_json_content_type,
    json_reply,
    parse_json_object,
)

_KEY = re.compile(r"sched:([A-Za-z0-9_-]{1,64}):([A-Za-z0-9_-]{1,64}):r([1-9][0-9]*)")
_STRING_FIELDS = ("content_id", "kind", "to", "version_id", "requested_by", "due_at")
FIELDS = frozenset((*_STRING_FIELDS, "workflow_revision"))


def transition(
    state: CoreState,
    now_ms: int,
    installation: Installation,
    headers: Mapping[str, str],
    body: bytes | None,
) -> tuple[Reply, bool]:
    """The reply, and whether a transition was applied by this call."""
    data = parse_json_object(body)
    key = header(headers, "idempotency-key")
    if data is None or key is None or not _well_formed(data, headers, key, installation):
        return error(400, "invalid_request"), False
    remembered = state.idempotency.get((installation.id, key))
    if remembered is not None:
        if remembered.body == data:
            return json_reply(200, {"code": "idempotent_replay"}), False
        return error(409, "idempotency_key_reused"), False
    kind = data["kind"]
    if CAPABILITY[kind] not in installation.capabilities:
        return error(403, "capability_refused"), False
    item = state.contents.get(data["content_id"])
    if item is None:
        return error(404, "content_not_found"), False
    if not installation.may_act_on(item.model):
        return error(403, "capability_refused"), False
    if item.primary_id != item.id:  # schedules are stored against the primary
        return error(400, "invalid_request"), False
    person = state.persons.get(data["requested_by"])
    if person is None or kind not in person.transitions:
        return error(403, "requester_unauthorized"), False

    group = state.groups[item.id]
    if data["to"] != TARGET[kind]:
        return error(422, "transition_unavailable"), False
    if data["workflow_revision"] != group.revision:
        return error(409, "scheduled_target_stale"), False
    possible = (
        group.current_version_id != group.published_version_id
        if kind == "publish"
        else group.published_version_id is not None
    )
    if not possible:
        return error(422, "transition_unavailable"), False
    pin = group.current_version_id if kind == "publish" else group.published_version_id
    if data["version_id"] != pin:
        return error(409, "scheduled_target_stale"), False

    state.apply(
        group,
        kind,
        pin,
        now_ms,
        installation_id=installation.id,
        idempotency_key=key,
        requested_by=person.id,
    )
    state.idempotency[(installation.id, key)] = Remembered(dict(data), now_ms)
    return json_reply(200, {"code": "transition_applied"}), True


def _well_formed(
    data: dict[str, Any], headers: Mapping[str, str], key: str, installation: Installation
) -> bool:
    if not is_json_content_type(headers) or set(data) != FIELDS:
        return False
    if any(not isinstance(data[name], str) for name in _STRING_FIELDS):
        return False
    revision = data["workflow_revision"]
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        return False
    if data["kind"] not in KINDS or parse_rfc3339(data["due_at"]) is None:
        return False
    if not all(is_id(data[name]) for name in ("content_id", "version_id", "requested_by")):
        return False
    match = _KEY.fullmatch(key)
    return match is not None and match.group(1) == installation.id
