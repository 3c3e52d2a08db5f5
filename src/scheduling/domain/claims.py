"""The runner's records of schedule sends: a due row as the runner saw it, a claim of it, how
the claim ended.

The leases store (`repository/leases.py`) reads and writes them; the engine's schedule work
(`runner/send_work.py`) decides with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduling.domain.deliveries import OutboxEvent
from scheduling.domain.release import ReleaseLine
from scheduling.domain.retry_policy import Settlement
from scheduling.domain.schedule import Attempt, Command
from scheduling.domain.statuses import Status


@dataclass(frozen=True)
class Waiting:
    """The other kind's waiting schedule of a due row's content: once the due row is done,
    its pin is out of date (issue 38), and its stale notice names it."""

    id: str
    kind: str
    to_state: str
    version_id: str
    due_at: int
    timezone: str
    local_time: str
    attempt_count: int


@dataclass(frozen=True)
class DueRow:
    """A due schedule as the runner sees it: what it observed (for the compare-and-set),
    its command, and its installation's base URL and sealed token."""

    id: str
    installation_id: str
    status: Status
    attempt_count: int
    lease_token: str | None
    base_url: str
    token_sealed: str
    command: Command
    result_code: str | None = None  # while retrying: the last attempt's code
    timezone: str = "UTC"
    local_time: str = ""
    subscribed: frozenset[str] = frozenset()  # the events its installation's endpoints hear of
    collides: Waiting | None = None  # the other kind's waiting schedule of its content
    made_stale_by: str | None = None  # a collision that ran made its pin stale
    conflict: str | None = None  # what a person's check found moved since its pin
    release: ReleaseLine | None = None  # the release it is an item of

    @property
    def due_at(self) -> int:
        return self.command.due_at

    @property
    def leads(self) -> bool:
        """An item of a release with items queued behind it: its settle makes the next due."""
        return self.release is not None and bool(self.release.behind)

    def observed(self) -> tuple[object, ...]:
        return (self.id, self.status, self.lease_token or "", self.attempt_count)


@dataclass(frozen=True)
class Claim:
    """A due row this runner claimed, under its batch's lease token."""

    row: DueRow
    attempt: int  # this claim's attempt number (attempt_count after the claim)
    lease_until: int  # when its lease runs out


@dataclass(frozen=True)
class SettledClaim:
    """How one claim ends: where its schedule goes, and the attempt when a request left
    (None: nothing was sent, so no attempt is counted); and the event it raises, when its
    installation's endpoints hear of it."""

    claim: Claim
    settlement: Settlement
    attempt: Attempt | None
    event: OutboxEvent | None = None
    stale_event: OutboxEvent | None = None  # a completion's notice of the schedule it made stale
    release_event: OutboxEvent | None = None  # its release held or completed by this end

    @property
    def handed_back(self) -> bool:
        """Never sent and back to waiting (a platform limit), rather than ended."""
        return self.attempt is None and self.settlement.status in (
            Status.PENDING,
            Status.RETRYING,
        )


# A due row ended without a claim: its result code, and the cap that ended it (if one did).
Unsent = tuple[DueRow, str, str | None]
