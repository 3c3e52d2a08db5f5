"""A release's decisions on known inputs (domain/schedules.py): the status a person sees, the
runner's hold at claim and where an unsent row goes, which release notice an item's end
raises, what a check finds of a pin, a reorder, a name, and the sentences, word for word.

The mutation map points `domain/schedules.py` here: each branch is named by a case."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduling.domain.outcomes import Status
from scheduling.domain.schedules import (
    CONFLICT,
    HELD_CONFLICT,
    HELD_STALE,
    RELEASE_HELD,
    REVISION_MOVED,
    RUNNING,
    VERSION_MOVED,
    Release,
    ReleaseLine,
    ReleaseStatus,
    completed_text,
    conflict_of,
    held_text,
    hold_code,
    name_refusal,
    new_release,
    release_event,
    reordered,
    shown_status,
    unsent_status,
)
from scheduling.domain.times import ResolvedTime
from tests.support.records import content_read

NOW = 1_782_980_000_000  # Thu 2 Jul 2026, 08:13:20 UTC
LINE = ReleaseLine("rel_1", "Spring launch", NOW, "Europe/Paris", ("sch_a",), ("sch_c",))


@pytest.mark.parametrize(
    ("stored", "due_at", "live", "stale", "shown"),
    [
        ("waiting", NOW + 1, 3, 0, "waiting"),
        ("waiting", NOW + 1, 3, 1, CONFLICT),
        ("waiting", NOW, 3, 0, RUNNING),  # its time has come
        ("waiting", NOW - 1, 1, 0, RUNNING),
        ("waiting", NOW - 1, 1, 1, CONFLICT),  # known stale, even while it runs
        ("waiting", NOW - 1, 0, 0, "waiting"),  # nothing live: nothing runs
        ("held", NOW - 1, 0, 1, "held"),
        ("completed", NOW - 1, 0, 0, "completed"),
        ("cancelled", NOW + 1, 2, 2, "cancelled"),
    ],
)
def test_the_status_a_person_sees(
    stored: str, due_at: int, live: int, stale: int, shown: str
) -> None:
    assert shown_status(stored, due_at, live=live, stale=stale, now=NOW) == shown


def test_a_release_read_with_its_counts_shows_its_status() -> None:
    release = Release(
        "rel_1", "ins_1", "Launch", NOW, "UTC", "2026-07-02T08:13", None,
        ReleaseStatus.WAITING, "usr_1", "Ada", 0, 0, items=3, live=2, stale=0,
    )  # fmt: skip
    assert release.shown(NOW - 1) == "waiting"
    assert release.shown(NOW) == RUNNING
    assert replace(release, stale=1).shown(NOW) == CONFLICT


def test_a_new_release_waits_at_its_time_made_by_its_person() -> None:
    when = ResolvedTime(NOW, "2026-10-25T02:30", "Europe/Paris", "later")
    made = new_release("rel_9", "ins_1", ("usr_1", "Ada"), "  Autumn  ", when, 7)
    assert made == Release(
        "rel_9", "ins_1", "Autumn", NOW, "Europe/Paris", "2026-10-25T02:30", "later",
        ReleaseStatus.WAITING, "usr_1", "Ada", 7, 7,
    )  # fmt: skip
    assert (made.held_by, made.ended_at, made.checked_at, made.items) == (None, None, None, 0)


@pytest.mark.parametrize(
    ("status", "made_stale_by", "conflict", "code"),
    [
        (Status.PENDING, None, None, None),
        (Status.RETRYING, None, None, None),
        (Status.PENDING, "sch_x", None, HELD_STALE),
        (Status.RETRYING, "sch_x", None, HELD_STALE),
        (Status.PENDING, None, VERSION_MOVED, HELD_CONFLICT),
        (Status.RETRYING, None, REVISION_MOVED, HELD_CONFLICT),
        (Status.PENDING, "sch_x", VERSION_MOVED, HELD_STALE),  # the collision says it first
        # A reclaimed row was sent already: it goes again with its key, never held.
        (Status.RUNNING, "sch_x", VERSION_MOVED, None),
        (Status.RUNNING, None, None, None),
    ],
)
def test_at_claim_a_row_known_stale_is_held(
    status: Status, made_stale_by: str | None, conflict: str | None, code: str | None
) -> None:
    assert hold_code(status, made_stale_by, conflict) == code


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (HELD_STALE, Status.HELD),
        (HELD_CONFLICT, Status.HELD),
        (RELEASE_HELD, Status.HELD),
        ("retry_exhausted", Status.REFUSED),
        ("token_unreadable", Status.REFUSED),
    ],
)
def test_an_unsent_row_is_held_for_a_hold_and_refused_otherwise(code: str, status: Status) -> None:
    assert unsent_status(code) == status


@pytest.mark.parametrize(
    ("status", "behind", "event"),
    [
        (Status.REFUSED, ("sch_c",), "release.held"),
        (Status.REFUSED, (), "release.held"),  # the last item not done holds it too
        (Status.HELD, ("sch_c",), "release.held"),
        (Status.COMPLETED, (), "release.completed"),
        (Status.COMPLETED, ("sch_c",), None),  # the next item is due: nothing to say yet
        (Status.RETRYING, (), None),
        (Status.PENDING, (), None),  # handed back
    ],
)
def test_which_release_notice_an_items_end_raises(
    status: Status, behind: tuple[str, ...], event: str | None
) -> None:
    line = ReleaseLine("rel_1", "Launch", NOW, "UTC", (), behind)
    assert release_event(status, line) == event
    assert release_event(status, None) is None  # a schedule of its own raises none


@pytest.mark.parametrize(
    ("kind", "version", "revision", "found"),
    [
        ("publish", "ver_13", 4, None),
        ("publish", "ver_12", 4, VERSION_MOVED),
        ("publish", "ver_13", 3, REVISION_MOVED),
        ("publish", "ver_12", 3, VERSION_MOVED),
        ("unpublish", "ver_9", 4, None),
        ("unpublish", "ver_13", 4, VERSION_MOVED),
    ],
)
def test_a_check_finds_what_moved_since_the_pin(
    kind: str, version: str, revision: int, found: str | None
) -> None:
    # Dee Wan reports current ver_13, published ver_9, workflow revision 4; it offers this
    # reader nothing, which is never a conflict (another person may make the change).
    assert conflict_of(kind, version, revision, content_read()) == found


def test_unpublishing_what_is_no_longer_published_is_a_moved_version() -> None:
    assert conflict_of("unpublish", "ver_9", 4, content_read(published=None)) == VERSION_MOVED


@pytest.mark.parametrize(
    ("item", "step", "order"),
    [
        ("b", -1, ["b", "a", "c"]),
        ("b", 1, ["a", "c", "b"]),
        ("a", 1, ["b", "a", "c"]),
        ("c", -1, ["a", "c", "b"]),
        ("a", -1, None),  # already first
        ("c", 1, None),  # already last
        ("z", 1, None),  # not an item
        ("b", 2, None),  # one place at a time
        ("b", 0, None),
        ("b", -2, None),
    ],
)
def test_a_reorder_moves_one_item_one_place(item: str, step: int, order: list[str] | None) -> None:
    before = ["a", "b", "c"]
    assert reordered(before, item, step) == order
    assert before == ["a", "b", "c"]  # a new order, the old one untouched


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Spring launch", None),
        ("  Spring launch  ", None),
        ("x" * 100, None),
        (" " + "x" * 100 + " ", None),
        ("x" * 101, "A release's name has at most 100 characters."),
        ("", "Give the release a name, so people know it when they see it."),
        ("   ", "Give the release a name, so people know it when they see it."),
    ],
)
def test_a_releases_name(name: str, said: str | None) -> None:
    assert name_refusal(name) == said


def test_a_held_release_says_what_was_applied_what_was_not_sent_and_why() -> None:
    assert held_text(LINE, "sch_b", "scheduled_target_stale", NOW) == (
        "Held at Thu 2 Jul 2026, 10:13 CEST (Europe/Paris; 08:13 UTC): item sch_b was not"
        " done (The content changed after it was scheduled (a newer version or workflow"
        " change), so the pinned version was not used. Schedule it again to pin the current"
        " version). The item applied before it stays applied: Scheduling cannot undo it. 1 item"
        " after it was not sent. Resume the rest, or cancel it, on the release's page."
    )


def test_a_held_release_counts_in_plurals_and_says_when_nothing_was_applied() -> None:
    first = ReleaseLine("rel_1", "Launch", NOW, "UTC", (), ("sch_b", "sch_c"))
    assert held_text(first, "sch_a", None, NOW) == (
        "Held at Thu 2 Jul 2026, 08:13 UTC: item sch_a was not done. Nothing of it was"
        " applied. 2 items after it were not sent. Resume the rest, or cancel it, on the"
        " release's page."
    )
    last = ReleaseLine("rel_1", "Launch", NOW, "UTC", ("sch_a", "sch_b"), ())
    assert held_text(last, "sch_c", "transition_refused", NOW) == (
        "Held at Thu 2 Jul 2026, 08:13 UTC: item sch_c was not done (Dee Wan's workflow rules"
        " did not allow this change when it was sent, so it was not applied. Check the content"
        " in Dee Wan, then try again). The 2 items applied before it stay applied: Scheduling"
        " cannot undo them. Resume the rest, or cancel it, on the release's page."
    )


def test_a_completed_release_says_so_in_its_zone() -> None:
    assert completed_text(LINE, NOW) == (
        "Completed at Thu 2 Jul 2026, 10:13 CEST (Europe/Paris; 08:13 UTC): every item of"
        " “Spring launch” was applied, in order."
    )


def test_a_chat_line_names_the_release_and_says_its_sentence() -> None:
    from scheduling.channels.chat import event_line
    from scheduling.domain.notifications import RELEASE_HELD, ReleaseEvent, read_event

    body = ReleaseEvent(
        type=RELEASE_HELD, at=NOW, installation_id="ins_1", release_id="rel_1",
        name="Spring <launch>", due_at=NOW, timezone="UTC", item_id="sch_b",
        result_code="transition_refused", applied=("sch_a",), held=("sch_c",),
        message=held_text(LINE, "sch_b", None, NOW),
    ).body("https://scheduling.example")  # fmt: skip
    line = event_line(read_event(body), "a title never shown")
    assert line.startswith("Release “Spring &lt;launch&gt;”: Held at Thu 2 Jul 2026, 10:13 CEST")
    assert "item sch_b was not done." in line
    assert "title" not in line


def test_a_releases_chat_line_keeps_its_name_from_mentioning_anyone_or_linking() -> None:
    """A release's name is a person's words, in its line and in its sentence: neither may
    ping a channel or read as a link (`chat.quoted`)."""
    from scheduling.channels.chat import event_line
    from scheduling.domain.notifications import RELEASE_COMPLETED, ReleaseEvent, read_event

    named = replace(LINE, name="@here [go](https://evil.example)")
    body = ReleaseEvent(
        type=RELEASE_COMPLETED, at=NOW, installation_id="ins_1", release_id="rel_1",
        name=named.name, due_at=NOW, timezone="UTC", item_id="sch_c", result_code=None,
        applied=("sch_a", "sch_c"), held=(), message=completed_text(named, NOW),
    ).body("https://scheduling.example")  # fmt: skip
    line = event_line(read_event(body), None)
    for markup in ("@here", "](", "://"):
        assert markup not in line
    assert line.replace("\u200b", "").count("@here [go](https://evil.example)") == 2
