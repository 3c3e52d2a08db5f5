"""Rights on known inputs: what a content launch and a manage launch may cancel, by refusal
code, and when the Cancel button shows (the content page's tests reach them through the
surface; these name every branch)."""

from __future__ import annotations

import pytest

from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import Rights, Schedule, offered_by
from tests.support.records import SCHEDULE, content_read, stored_schedule

EDITOR = Rights.of_content("cnt_1", [("publish", "published"), ("unpublish", "draft")])


def test_a_content_launch_keeps_what_dee_wan_offered_for_its_content() -> None:
    read = content_read(transitions=(("publish", "published"),))
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
        (EDITOR, stored_schedule(kind="unpublish", to_state="draft"), None),
        (EDITOR, stored_schedule(content_id="cnt_2"), "other_content"),
        (EDITOR, stored_schedule(to_state="archived"), "cancel_not_allowed"),
        (Rights.of_content("cnt_1", []), SCHEDULE, "cancel_not_allowed"),
        (Rights.of_content(None, [("publish", "published")]), SCHEDULE, "other_content"),
        (Rights.everything(), stored_schedule(content_id="cnt_2", to_state="x"), None),
    ],
)
def test_who_may_cancel_what(rights: Rights, schedule: Schedule, refusal: str | None) -> None:
    assert rights.cancel_refusal(schedule) == refusal


@pytest.mark.parametrize("status", list(Status))
def test_the_cancel_button_shows_on_waiting_schedules_one_may_cancel(status: Status) -> None:
    # spelt out, not outcomes.WAITING: a release's queued item is cancelled as any waiting one
    shown = status in (Status.PENDING, Status.RETRYING, Status.QUEUED)
    assert EDITOR.shows_cancel(stored_schedule(status=status)) is shown
    assert Rights.everything().shows_cancel(stored_schedule(status=status)) is shown
    assert not EDITOR.shows_cancel(stored_schedule(status=status, content_id="cnt_2"))


def test_the_dismiss_button_is_a_managers_on_a_refusal_still_in_needs_attention() -> None:
    refused = stored_schedule(status=Status.REFUSED)
    manager = Rights.everything()
    assert manager.shows_dismiss(refused)
    assert not EDITOR.shows_dismiss(refused)  # a content launch never dismisses
    assert not manager.shows_dismiss(stored_schedule(status=Status.COMPLETED))
    dismissed = stored_schedule(status=Status.REFUSED, dismissed_at=1, dismissed_by_name="Ada")
    assert not manager.shows_dismiss(dismissed)


def test_who_may_decide_an_agents_proposal() -> None:
    """Confirm and Decline: a manage launch always; a content launch for a kind of change Dee
    Wan offered it, whatever the state it leads to."""
    editor = Rights.of_content("cnt_1", {("publish", "published")})
    assert Rights.everything().may_decide("unpublish")
    assert editor.may_decide("publish")
    assert not editor.may_decide("unpublish")
    assert not Rights.of_content("cnt_1", ()).may_decide("publish")
