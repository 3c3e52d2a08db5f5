"""One set of statuses: the enum, its groups, and everything that names a status by it."""

from __future__ import annotations

from scheduling.domain.outcomes import FINISHED, GROUPS, LIVE, WAITING, Status, group_of
from scheduling.domain.wording import STATUS
from scheduling.runner.engine import TickReport


def test_the_groups_split_the_statuses() -> None:
    assert set(WAITING) < set(LIVE)
    assert set(LIVE).isdisjoint(FINISHED)
    assert {*LIVE, *FINISHED} == set(Status)
    assert sorted(s for group in GROUPS.values() for s in group) == sorted(Status)


def test_every_status_has_its_words() -> None:
    assert set(STATUS) == set(Status)
    assert all(STATUS[status] for status in Status)


def test_statuses_are_their_stored_text() -> None:
    stored = "pending retrying running completed refused cancelled superseded queued held"
    assert [str(status) for status in Status] == stored.split()
    assert Status("retrying") is Status.RETRYING
    assert f"{Status.REFUSED}" == "refused"


def test_a_tick_counts_each_settled_status_once() -> None:
    report = TickReport()
    for status in (Status.COMPLETED, Status.RETRYING, Status.REFUSED, Status.REFUSED):
        report.ended(status)
    assert report.outcomes() == {"completed": 1, "refused": 2, "retrying": 1}


def test_a_waiting_schedule_that_needs_a_new_pin_needs_attention() -> None:
    assert [group_of(Status.PENDING), group_of(Status.REFUSED)] == ["upcoming", "attention"]
    assert group_of(Status.PENDING, needs_repin=True) == "attention"
    assert group_of(Status.QUEUED, needs_repin=True) == "attention"
    assert group_of(Status.REFUSED, settled=True) == "finished"
