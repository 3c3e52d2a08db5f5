"""Rights on known inputs: what a content launch and a manage launch may cancel, by refusal
code, and when the Cancel button shows (the content page's tests reach them through the
surface; these name every branch)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduling.domain.content import ContentRead
from scheduling.domain.rights import Rights, offered_by
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import Status

SCHEDULE = Schedule(
    id="sch_1", installation_id="ins_1", content_id="cnt_1", kind="publish",
    to_state="published", version_id="ver_13", workflow_revision=4, revision=1,
    idempotency_key="key", due_at=0, timezone="UTC", local_time="2026-07-01T13:00", fold=None,
    status=Status.PENDING, result_code=None, attempt_count=0, next_attempt_at=None,
    requested_by="usr_1", requested_by_name="Ada", created_at=0, updated_at=0,
)  # fmt: skip
EDITOR = Rights.of_content("cnt_1", [("publish", "published"), ("unpublish", "draft")])


def test_a_content_launch_keeps_what_dee_wan_offered_for_its_content() -> None:
    read = ContentRead.model_validate(
        {
            "code": "content",
            "content": {
                "id": "cnt_en", "primary_id": "cnt_1", "title": "Hello", "model": "article",
                "locale": "en", "current_version_id": "ver_13", "published_version_id": None,
            },
            "workflow": {"revision": 4, "transitions": [{"kind": "publish", "to": "published"}]},
            "site": {"timezone": "Europe/Paris"},
        }
    )  # fmt: skip
    assert offered_by(read) == frozenset({("publish", "published")})
    assert Rights.read(read) == Rights(False, "cnt_1", frozenset({("publish", "published")}))
    editor = Rights.of_content("cnt_1", iter([("publish", "published"), ("unpublish", "draft")]))
    assert editor == Rights(
        False, "cnt_1", frozenset({("publish", "published"), ("unpublish", "draft")})
    )
    assert Rights.everything() == Rights(True, None, frozenset())


def test_an_offered_change_is_offered_as_kind_and_state_together() -> None:
    assert EDITOR.offers("publish", "published")
    assert EDITOR.offers("unpublish", "draft")
    assert not EDITOR.offers("publish", "draft")
    assert not Rights.everything().offers("publish", "published")


@pytest.mark.parametrize(
    ("rights", "schedule", "refusal"),
    [
        (EDITOR, SCHEDULE, None),
        (EDITOR, replace(SCHEDULE, kind="unpublish", to_state="draft"), None),
        (EDITOR, replace(SCHEDULE, content_id="cnt_2"), "other_content"),
        (EDITOR, replace(SCHEDULE, to_state="archived"), "cancel_not_allowed"),
        (Rights.of_content("cnt_1", []), SCHEDULE, "cancel_not_allowed"),
        (Rights.of_content(None, [("publish", "published")]), SCHEDULE, "other_content"),
        (Rights.everything(), replace(SCHEDULE, content_id="cnt_2", to_state="x"), None),
    ],
)
def test_who_may_cancel_what(rights: Rights, schedule: Schedule, refusal: str | None) -> None:
    assert rights.cancel_refusal(schedule) == refusal


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        (Status.PENDING, True),
        (Status.RETRYING, True),
        (Status.RUNNING, False),
        (Status.COMPLETED, False),
        (Status.CANCELLED, False),
    ],
)
def test_the_cancel_button_shows_on_waiting_schedules_one_may_cancel(
    status: Status, shown: bool
) -> None:
    assert EDITOR.shows_cancel(replace(SCHEDULE, status=status)) is shown
    assert Rights.everything().shows_cancel(replace(SCHEDULE, status=status)) is shown
    assert not EDITOR.shows_cancel(replace(SCHEDULE, status=status, content_id="cnt_2"))
