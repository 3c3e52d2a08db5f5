"""A schedule as a page lists it: with what Dee Wan reports about its content now, and what
the person who opened the page may do with it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduling.domain.content import ContentRead
from scheduling.domain.pins import pin_of, stale_reason
from scheduling.domain.rights import Rights
from scheduling.domain.schedule import Schedule
from scheduling.domain.statuses import NOT_DONE
from scheduling.repository.schedules import PAGE_SIZE


@dataclass(frozen=True)
class Listed:
    """One schedule in a listing, with what the page can offer for it."""

    schedule: Schedule
    cancellable: bool  # the Cancel button: `Rights.shows_cancel`
    title: str | None = None  # the content's title, read now (None: not read)
    stale: str | None = None  # why Dee Wan would refuse it today (`pins.stale_reason`)
    repin_version: str | None = None  # what one step would pin it to instead
    retry_pin: str | None = None  # a refused one's Try again: the version it would pin
    dismissable: bool = False  # a refused one's Dismiss (`Rights.may_dismiss`)


def last_page(total: int) -> int:
    """The last page of a listing of `total` schedules (1 when it is empty)."""
    return max(1, -(-total // PAGE_SIZE))


def listed(
    rows: Iterable[Schedule], rights: Rights, reads: Mapping[str, ContentRead | None]
) -> tuple[Listed, ...]:
    """`reads` maps a content's primary id to its read now (None, or absent: not read)."""
    return tuple(_listed(row, rights, reads.get(row.content_id)) for row in rows)


def _listed(schedule: Schedule, rights: Rights, read: ContentRead | None) -> Listed:
    cancellable = rights.shows_cancel(schedule)
    dismissable = rights.shows_dismiss(schedule)
    if read is None:
        return Listed(schedule, cancellable, dismissable=dismissable)
    stale = stale_reason(schedule, read)
    return Listed(
        schedule,
        cancellable,
        title=read.content.title,
        stale=stale,
        repin_version=_repin_version(schedule, rights, read) if stale else None,
        retry_pin=_retry_pin(schedule, rights, read),
        dismissable=dismissable,
    )


def _retry_pin(schedule: Schedule, rights: Rights, read: ContentRead) -> str | None:
    """A refused (or held) schedule is tried again from its content's page, by a person Dee Wan lets
    make that change, pinned to what the content reports now (its own pin while that is
    still current); not once a later schedule of the change was done."""
    if schedule.status not in NOT_DONE or schedule.resolved_by is not None:
        return None
    if schedule.release_id is not None:  # its release is resumed instead, in order
        return None
    if rights.manage or not rights.offers(schedule.kind, schedule.to_state):
        return None
    return pin_of(schedule.kind, read.content)


def _repin_version(schedule: Schedule, rights: Rights, read: ContentRead) -> str | None:
    """A stale schedule is re-pinned from its content's page, by a person Dee Wan lets make
    that change, to what the content reports now (when there is something to pin)."""
    if rights.manage or not rights.offers(schedule.kind, schedule.to_state):
        return None
    return pin_of(schedule.kind, read.content)
