"""Two waiting schedules of one content that collide (domain/schedules.py), on known inputs:
which runs first, the roles and every sentence word for word, the minute's edge, and what
never collides. `test_collisions.py` walks the same through the pages and the runner."""

from __future__ import annotations

import pytest

from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import (
    MAKES_STALE,
    STALE_AFTER,
    WAYS_OUT,
    Conflict,
    before_text,
    conflicts,
    named,
    needs_repin_said,
    needs_repin_text,
    shown_versions,
)
from scheduling.domain.wording import Refusal
from tests.support.records import stored_schedule

T = 1_782_979_200_000  # Thu 2 Jul 2026, 08:00 UTC (10:00 CEST)
PARIS = "Europe/Paris"
PUBLISH = stored_schedule(id="sch_p", due_at=T, timezone=PARIS)
UNPUBLISH = stored_schedule(
    id="sch_u", kind="unpublish", to_state="draft", version_id="ver_9", due_at=T + 300_000,
    timezone=PARIS,
)  # fmt: skip
AT_10 = "the publish of version ver_13 at Thu 2 Jul 2026, 10:00 CEST (Europe/Paris; 08:00 UTC)"
AT_10_05 = "the unpublish of version ver_9 at Thu 2 Jul 2026, 10:05 CEST (Europe/Paris; 08:05 UTC)"


def test_the_first_to_run_makes_the_other_stale() -> None:
    assert named(UNPUBLISH) == AT_10_05
    assert conflicts([UNPUBLISH, PUBLISH]) == {
        "sch_u": Conflict(
            STALE_AFTER,
            "sch_p",
            f"Will be refused unless pinned again: {AT_10} runs first and changes the content,"
            " so Dee Wan will refuse this unpublish at its time (its pin will be out of date)."
            f" {WAYS_OUT}",
        ),
        "sch_p": Conflict(
            MAKES_STALE,
            "sch_u",
            f"Runs first and makes {AT_10_05} out of date: that schedule's card says what to do.",
        ),
    }


@pytest.mark.parametrize(
    ("first_ms", "later_ms", "same"),
    [(0, 59_999, True), (10_000, 50_000, True), (0, 60_000, False)],
)
def test_within_the_same_minute_either_may_be_refused(
    first_ms: int, later_ms: int, same: bool
) -> None:
    publish = stored_schedule(id="sch_p", due_at=T + first_ms, timezone=PARIS)
    unpublish = stored_schedule(
        id="sch_u", kind="unpublish", version_id="ver_9", due_at=T + later_ms, timezone=PARIS
    )
    found = conflicts([publish, unpublish])
    assert (found["sch_u"].role, found["sch_u"].other_id) == (STALE_AFTER, "sch_p")
    assert (found["sch_p"].role, found["sch_p"].other_id) == (MAKES_STALE, "sch_u")
    if same:
        assert found["sch_u"].text.startswith("Will likely be refused: " + AT_10[:56])
        assert (
            ". Both are due at the same minute, so whichever Dee Wan applies first makes the"
            f" other one refused. {WAYS_OUT}"
        ) in found["sch_u"].text
        assert found["sch_p"].text.startswith("Collides with " + AT_10_05[:50])
        assert found["sch_p"].text.endswith(
            "Both are due at the same minute: that schedule's card says what to do."
        )
    else:
        assert found["sch_u"].text.startswith("Will be refused unless pinned again:")
        assert found["sch_p"].text.startswith("Runs first")


def test_a_retry_runs_at_its_next_try_and_a_tie_goes_to_the_smaller_id() -> None:
    retrying = stored_schedule(
        id="sch_p", status=Status.RETRYING, due_at=T - 600_000, next_attempt_at=T + 600_000
    )
    assert conflicts([retrying, UNPUBLISH])["sch_u"].role == MAKES_STALE
    tie = stored_schedule(id="sch_a", kind="unpublish", version_id="ver_9", due_at=T)
    assert conflicts([PUBLISH, tie])["sch_a"].role == MAKES_STALE
    assert conflicts([tie, PUBLISH])["sch_p"].role == STALE_AFTER


def test_each_contents_pair_is_judged() -> None:
    other = {"content_id": "cnt_2", "timezone": PARIS}
    found = conflicts(
        [
            stored_schedule(id="sch_o", content_id="cnt_0"),  # alone: no pair
            PUBLISH,
            UNPUBLISH,
            stored_schedule(id="sch_q", due_at=T, **other),
            stored_schedule(id="sch_v", kind="unpublish", due_at=T + 1_000, **other),
            stored_schedule(id="sch_r", due_at=T + 900_000, content_id="cnt_3"),
            stored_schedule(id="sch_w", kind="unpublish", due_at=T, content_id="cnt_3"),
        ]
    )
    assert {key: c.role for key, c in found.items()} == {
        "sch_p": MAKES_STALE, "sch_u": STALE_AFTER,
        "sch_q": MAKES_STALE, "sch_v": STALE_AFTER,
        "sch_w": MAKES_STALE, "sch_r": STALE_AFTER,
    }  # fmt: skip


@pytest.mark.parametrize(
    "other",
    [
        stored_schedule(id="sch_u", kind="unpublish", content_id="cnt_2", due_at=T),
        stored_schedule(id="sch_u", kind="unpublish", installation_id="ins_2", due_at=T),
        stored_schedule(id="sch_u", kind="unpublish", status=Status.COMPLETED, due_at=T),
        stored_schedule(id="sch_u", kind="unpublish", made_stale_by="sch_x", due_at=T),
        stored_schedule(id="sch_u", kind="publish", due_at=T + 60_000),  # the same kind
    ],
)
def test_what_never_collides(other: object) -> None:
    assert conflicts([PUBLISH, other]) == {}  # type: ignore[list-item]


def test_the_forms_warning_and_the_needs_a_new_pin_sentence() -> None:
    assert before_text(PUBLISH) == (
        f"T{AT_10[1:]} is waiting for this content. Whichever of the two runs second will be"
        " refused: the first changes the content, so the second's pin is out of date by then."
    )
    assert needs_repin_said("publish", T, "Asia/Tokyo") == (
        "Needs a new pin: an unpublish of this content was done at Thu 2 Jul 2026, 17:00 JST"
        " (Asia/Tokyo; 08:00 UTC), so Dee Wan would refuse this publish at its time. Open the"
        " content from Dee Wan and pin it again in one step, at the same time; or cancel it."
    )
    assert needs_repin_said("unpublish", None, PARIS).startswith(
        "Needs a new pin: a publish of this content was done, so Dee Wan would refuse this"
        " unpublish at its time."
    )
    stale = stored_schedule(made_stale_by="sch_u", made_stale_at=T, timezone=PARIS)
    assert needs_repin_text(stale) == (
        "Needs a new pin: an unpublish of this content was done at Thu 2 Jul 2026, 10:00 CEST"
        " (Europe/Paris; 08:00 UTC), so Dee Wan would refuse this publish at its time. Open the"
        " content from Dee Wan and pin it again in one step, at the same time; or cancel it."
    )
    assert "was done at Thu 2 Jul 2026, 17:00 JST" in needs_repin_text(stale, "Asia/Tokyo")


def test_a_form_says_which_versions_its_page_showed() -> None:
    shown = shown_versions(" ver_13 ", "")
    assert (shown.current, shown.published, shown.pin("unpublish")) == ("ver_13", None, None)
    with pytest.raises(Refusal) as refused:
        shown_versions("", "ver_9")
    assert (refused.value.status, refused.value.code) == (400, "invalid_request")
    assert refused.value.message == (
        "This form does not say which version it showed. Reload the page and try again."
    )
