"""Schedules as a page lists them: each with what Dee Wan reports about its content now and what
the person may do with it; and contents' titles, read live a few at a time within one budget
and never stored (the page says how many came late or failed).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduling.actions.access import Access, read_content_with
from scheduling.dee_wan import UNAVAILABLE, CoreError
from scheduling.domain.outcomes import NOT_DONE
from scheduling.domain.protocol import ContentRead
from scheduling.domain.schedules import Rights, Schedule, pin_of, stale_reason
from scheduling.ports import gather_limited
from scheduling.repository.schedules import PAGE_SIZE
from scheduling.services import Services, log

# -- titles ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Titles:
    """Content titles read from Dee Wan for a page, and how many reads failed or came late."""

    reads: dict[str, ContentRead | None]  # content id -> its read, None when not read
    late: int = 0  # reads the budget ran out on, or Dee Wan did not answer (slow or down)
    failed: int = 0  # reads Dee Wan refused, or answered in a way that cannot be trusted

    def title(self, content_id: str) -> str | None:
        read = self.reads.get(content_id)
        return read.content.title if read is not None else None


_LATE = "over the page's budget"


async def read_titles(
    services: Services, access: Access, content_ids: set[str], *, budget_s: float
) -> Titles:
    """Each content's read with the session's delegation; all the reads share `budget_s`,
    so a hanging Dee Wan cannot hold the page."""
    ids = sorted(content_ids)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s

    async def read_one(content_id: str) -> ContentRead | str:
        remaining = deadline - loop.time()
        if remaining <= 0:
            reason = _LATE
        else:
            try:
                return await asyncio.wait_for(
                    read_content_with(services, access, content_id), remaining
                )
            except CoreError as exc:
                reason = _LATE if exc.code == UNAVAILABLE else exc.code
            except TimeoutError:
                reason = _LATE
        log.info(
            "installation %s: title of %s not read: %s", access.installation.id, content_id, reason
        )
        return reason

    outcomes = await gather_limited(
        services.config.send_concurrency, [functools.partial(read_one, cid) for cid in ids]
    )
    reasons = [o for o in outcomes if isinstance(o, str)]
    return Titles(
        reads={
            cid: None if isinstance(o, str) else o for cid, o in zip(ids, outcomes, strict=True)
        },
        late=reasons.count(_LATE),
        failed=len(reasons) - reasons.count(_LATE),
    )


# -- a listed schedule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """One schedule in a listing, with what the page can offer for it."""

    schedule: Schedule
    cancellable: bool  # the Cancel button: `Rights.shows_cancel`
    title: str | None = None  # the content's title, read now (None: not read)
    stale: str | None = None  # why Dee Wan would refuse it today (`schedules.stale_reason`)
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
    return _repin_version(schedule, rights, read)


def _repin_version(schedule: Schedule, rights: Rights, read: ContentRead) -> str | None:
    """A stale schedule is re-pinned from its content's page, by a person Dee Wan lets make
    that change, to what the content reports now (when there is something to pin)."""
    if rights.manage or not rights.offers(schedule.kind, schedule.to_state):
        return None
    return pin_of(schedule.kind, read.content)
