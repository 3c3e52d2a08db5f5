"""A schedule and its attempts, as stored: one pinned change of one content at one instant.

The repository reads and writes these records; the rules (`pins`, `rights`,
`retry_policy`) and the pages read them. `revision` counts the schedules of
this installation + content + kind, and goes into the idempotency key.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.statuses import WAITING, Status


@dataclass(frozen=True)
class NewSchedule:
    """What a create stores; the revision and the idempotency key are computed at insert."""

    id: str
    installation_id: str
    content_id: str  # primary id
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    requested_by: str
    requested_by_name: str
    title_sealed: str | None = None  # as the editor saw it, sealed: a digest's line names it
    release_id: str | None = None  # the release it joins (queued: its line makes it due)
    release_position: int | None = None  # its place there; None: at the end
    replaces: str | None = None  # the schedule it is made from, and how (`replaced_as`)
    replaced_as: str | None = None


# A stored title is cut to this many characters.
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class Command:
    """What a stored schedule sends Dee Wan (protocol §6): the same on every retry."""

    idempotency_key: str
    content_id: str  # primary id
    kind: str
    to_state: str
    version_id: str  # the pin
    workflow_revision: int
    requested_by: str
    due_at: int


@dataclass(frozen=True)
class Attempt:
    """One send of a schedule's command: started, and finished with Dee Wan's answer (or not:
    a start without a finish belongs to a runner that died)."""

    number: int
    started_at: int
    finished_at: int | None
    code: str | None
    http_status: int | None


@dataclass(frozen=True)
class Schedule:
    """One scheduled change of a content item, as stored."""

    id: str
    installation_id: str
    content_id: str
    kind: str
    to_state: str
    version_id: str
    workflow_revision: int
    revision: int
    idempotency_key: str
    due_at: int
    timezone: str
    local_time: str
    fold: str | None
    status: Status
    result_code: str | None
    attempt_count: int
    next_attempt_at: int | None
    requested_by: str
    requested_by_name: str
    created_at: int
    updated_at: int
    cancelled_by_name: str | None = None
    cancelled_at: int | None = None
    ended_by: str | None = None  # which cap ended a `retry_exhausted` one (`outcomes.ENDED_BY`)
    dismissed_by_name: str | None = None
    dismissed_at: int | None = None
    resolved_by: str | None = None  # a later schedule of the same change that was done
    # The other kind's schedule of the same content whose completion put this one's pin out of
    # date while it waited (migration 0017), and when: it would be refused at its time.
    made_stale_by: str | None = None
    made_stale_at: int | None = None
    release_id: str | None = None  # the release it is an item of, at `release_position`
    release_position: int | None = None
    conflict: str | None = None  # what a check found moved since its pin (`releases`)
    conflict_at: int | None = None
    replaces: str | None = None  # the schedule it was made from, and how (`replaced_as`)
    replaced_as: str | None = None
    attempts: tuple[Attempt, ...] = ()

    @property
    def settled(self) -> bool:
        """A refused schedule nobody needs to look at any more: a site admin dismissed it, or
        a later schedule of the same content and change was done."""
        return self.status in (Status.REFUSED, Status.HELD) and (
            self.dismissed_at is not None or self.resolved_by is not None
        )

    @property
    def needs_repin(self) -> bool:
        """Waiting, with a pin the other kind's completed schedule put out of date."""
        return self.made_stale_by is not None and self.status in WAITING
