"""The core's records built from known values, for tests of the rules that read them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduling.domain.outcomes import Status
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import NewSchedule, Schedule

SCHEDULE = Schedule(
    id="sch_1", installation_id="ins_1", content_id="cnt_1", kind="publish",
    to_state="published", version_id="ver_13", workflow_revision=4, revision=1,
    idempotency_key="key", due_at=0, timezone="UTC", local_time="2026-07-01T13:00", fold=None,
    status=Status.PENDING, result_code=None, attempt_count=0, next_attempt_at=None,
    requested_by="usr_1", requested_by_name="Ada", created_at=0, updated_at=0,
)  # fmt: skip


def stored_schedule(**changes: Any) -> Schedule:
    """A pending publish of `cnt_1` pinning `ver_13` at workflow revision 4, with `changes`."""
    return replace(SCHEDULE, **changes)


NEW_SCHEDULE = NewSchedule(
    id="sch_1", installation_id="ins_1", content_id="cnt_en", kind="publish",
    to_state="published", version_id="ver_1", workflow_revision=1, due_at=0, timezone="UTC",
    local_time="2026-07-01T11:00", fold=None, requested_by="usr_editor",
    requested_by_name="Ada Lovelace",
)  # fmt: skip


def new_schedule(**changes: Any) -> NewSchedule:
    """A publish of the sample site's `cnt_en` pinning `ver_1` by Ada, with `changes`."""
    return replace(NEW_SCHEDULE, **changes)


def content_read(
    current: str = "ver_13",
    published: str | None = "ver_9",
    revision: int = 4,
    transitions: tuple[tuple[str, str], ...] = (),
) -> ContentRead:
    """Dee Wan's read of `cnt_1` (an English version `cnt_en`) as protocol v1 shapes it."""
    return ContentRead.model_validate(
        {
            "code": "content",
            "content": {
                "id": "cnt_en", "primary_id": "cnt_1", "title": "Hello", "model": "article",
                "locale": "en", "current_version_id": current, "published_version_id": published,
            },
            "workflow": {
                "revision": revision,
                "transitions": [{"kind": kind, "to": to} for kind, to in transitions],
            },
            "site": {"timezone": "Europe/Paris"},
        }
    )  # fmt: skip
