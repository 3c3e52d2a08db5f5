"""Pins on known inputs: which version each kind pins, and the sentences that say a page's
versions or a waiting schedule's pin moved, word for word (the content page's tests reach
them through the surface; these name every branch)."""

from __future__ import annotations

import pytest

from scheduling.domain.outcomes import Status
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import (
    ShownVersions,
    changed_since_shown,
    describe_pin,
    pin_for,
    pin_of,
    stale_reason,
)
from tests.support.records import SCHEDULE, content_read, stored_schedule

AGAIN = "Nothing was scheduled; check the page below, then press Schedule again."


def test_publish_pins_the_current_version_and_unpublish_the_published_one() -> None:
    assert pin_for("publish", "ver_13", "ver_9") == "ver_13"
    assert pin_for("unpublish", "ver_13", "ver_9") == "ver_9"
    assert pin_for("unpublish", "ver_13", None) is None
    assert pin_of("publish", content_read().content) == "ver_13"
    assert pin_of("unpublish", content_read().content) == "ver_9"
    assert ShownVersions("ver_2", "ver_1").pin("publish") == "ver_2"
    assert ShownVersions("ver_2", "ver_1").pin("unpublish") == "ver_1"
    assert ShownVersions("ver_2", None).pin("unpublish") is None


@pytest.mark.parametrize(
    ("kind", "version", "said"),
    [
        ("publish", "ver_13", "the current version is ver_13"),
        ("unpublish", "ver_9", "the published version is ver_9"),
        ("unpublish", None, "nothing is published"),
        ("unpublish", "", "nothing is published"),
    ],
)
def test_describe_pin(kind: str, version: str | None, said: str) -> None:
    assert describe_pin(kind, version) == said


@pytest.mark.parametrize(
    ("kind", "shown", "now", "said"),
    [
        ("publish", ShownVersions("ver_12", "ver_9"), content_read(),
         "you saw the current version ver_12, and the current version is ver_13 now."),
        ("unpublish", ShownVersions("ver_13", "ver_8"), content_read(),
         "you saw the published version ver_8, and the published version is ver_9 now."),
        ("unpublish", ShownVersions("ver_13", None), content_read(),
         "you saw nothing published, and the published version is ver_9 now."),
        ("unpublish", ShownVersions("ver_13", "ver_9"), content_read(published=None),
         "you saw the published version ver_9, and nothing is published now."),
    ],
)  # fmt: skip
def test_a_page_whose_pin_moved_says_what_was_seen_and_what_is_now(
    kind: str, shown: ShownVersions, now: ContentRead, said: str
) -> None:
    assert changed_since_shown(kind, shown, now) == (
        f"The content changed since this page was shown: {said} {AGAIN}"
    )


def test_a_page_whose_pin_did_not_move_is_not_a_change() -> None:
    assert changed_since_shown("publish", ShownVersions("ver_13", "ver_1"), content_read()) is None
    assert changed_since_shown("unpublish", ShownVersions("ver_1", "ver_9"), content_read()) is None
    unpublished = content_read(published=None)
    assert changed_since_shown("unpublish", ShownVersions("ver_1", None), unpublished) is None
    # A kind that pins nothing is left to the create's own refusal.
    assert changed_since_shown("archive", ShownVersions("ver_1", "ver_2"), content_read()) is None


def test_a_waiting_schedule_dee_wan_would_refuse_says_why() -> None:
    assert stale_reason(SCHEDULE, content_read()) is None
    assert stale_reason(stored_schedule(status=Status.RETRYING), content_read()) is None
    assert stale_reason(SCHEDULE, content_read(current="ver_14")) == (
        "It will be refused: it pins ver_13; the current version is ver_14 now."
    )
    unpublish = stored_schedule(kind="unpublish", to_state="draft", version_id="ver_9")
    assert stale_reason(unpublish, content_read()) is None
    assert stale_reason(unpublish, content_read(published=None)) == (
        "It will be refused: it pins ver_9; nothing is published now."
    )
    assert stale_reason(SCHEDULE, content_read(revision=5)) == (
        "It will be refused: it was made at workflow revision 4; the content is at revision 5 now."
    )


@pytest.mark.parametrize(
    "status", [Status.RUNNING, Status.COMPLETED, Status.REFUSED, Status.CANCELLED]
)
def test_a_schedule_no_longer_waiting_is_never_stale(status: Status) -> None:
    assert (
        stale_reason(stored_schedule(status=status), content_read(current="ver_14", revision=5))
        is None
    )
