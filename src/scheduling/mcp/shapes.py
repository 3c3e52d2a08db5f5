"""Schedules and proposals as the tools answer them: ids, changes and instants (RFC 3339,
UTC) with the wall time and zone they were given in. Never a title, a token or a key."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from scheduling.domain.localtime import rfc3339
from scheduling.domain.release import Release
from scheduling.domain.schedule import Schedule
from scheduling.domain.time_words import instant_text
from scheduling.domain.wording import STATUS
from scheduling.repository.proposals import Proposal


class _Shape(BaseModel):
    model_config = ConfigDict(frozen=True)


class AttemptShape(_Shape):
    number: int
    started_at: str
    finished_at: str | None
    code: str | None
    http_status: int | None


class ReleaseRef(_Shape):
    """The release an item belongs to, and its place in the send order."""

    id: str
    name: str
    position: int
    status: str  # waiting, conflict, running, held, completed, cancelled


class ScheduleShape(_Shape):
    id: str
    content_id: str
    change: str  # publish | unpublish
    to: str
    version_id: str
    status: str
    status_words: str
    due_at: str
    when: str  # in words, in its zone
    local_time: str
    timezone: str
    fold: str | None
    requested_by_name: str
    result_code: str | None
    attempts: int
    release: ReleaseRef | None = None


class ProposalShape(_Shape):
    id: str
    content_id: str
    change: str
    to: str | None
    local_time: str
    timezone: str
    fold: str | None
    due_at: str
    when: str
    note: str
    status: str  # pending, confirmed, declined, withdrawn, expired
    for_person: str
    schedule_id: str | None
    release_id: str | None = None  # it adds the change to this waiting release
    changes: str | None = None  # it moves, or sends now (`changes_as`), this waiting schedule
    changes_as: str | None = None


def schedule_shape(
    schedule: Schedule, releases: Mapping[str, Release] | None = None, now: int = 0
) -> ScheduleShape:
    """`releases`: the items' releases by id (read with them), for `release`."""
    release = (releases or {}).get(schedule.release_id or "")
    return ScheduleShape(
        release=None
        if release is None
        else ReleaseRef(
            id=release.id,
            name=release.name,
            position=schedule.release_position or 0,
            status=release.shown(now),
        ),
        id=schedule.id,
        content_id=schedule.content_id,
        change=schedule.kind,
        to=schedule.to_state,
        version_id=schedule.version_id,
        status=schedule.status.value,
        status_words=STATUS[schedule.status],
        due_at=rfc3339(schedule.due_at),
        when=instant_text(schedule.due_at, schedule.timezone),
        local_time=schedule.local_time,
        timezone=schedule.timezone,
        fold=schedule.fold,
        requested_by_name=schedule.requested_by_name,
        result_code=schedule.result_code,
        attempts=schedule.attempt_count,
    )


def attempt_shapes(schedule: Schedule) -> list[AttemptShape]:
    return [
        AttemptShape(
            number=a.number,
            started_at=rfc3339(a.started_at),
            finished_at=None if a.finished_at is None else rfc3339(a.finished_at),
            code=a.code,
            http_status=a.http_status,
        )
        for a in schedule.attempts
    ]


def proposal_shape(proposal: Proposal, now: int) -> ProposalShape:
    return ProposalShape(
        id=proposal.id,
        content_id=proposal.content_id,
        change=proposal.kind,
        to=proposal.to_state,
        local_time=proposal.local_time,
        timezone=proposal.timezone,
        fold=proposal.fold,
        due_at=rfc3339(proposal.due_at),
        when=instant_text(proposal.due_at, proposal.timezone),
        note=proposal.note,
        status=proposal.status_at(now),
        for_person=proposal.person_name,
        schedule_id=proposal.schedule_id,
        release_id=proposal.release_id,
        changes=proposal.changes,
        changes_as=proposal.changes_as,
    )
