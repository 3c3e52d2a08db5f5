"""What one runner invocation did, counted exactly: a tick's is logged as one JSON line and kept
for /admin/status; a queue consumer's is logged the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

from scheduling.domain.statuses import Status


@dataclass
class TickReport:
    cron_delay_ms: int = 0  # the invocation's start minus its scheduledTime (0 if not late)
    due: int = 0  # rows the due queries returned (a row retried within the tick counts again)
    claimed: int = 0
    batches: int = 0
    sends: int = 0  # requests that left for Dee Wan
    completed: int = 0
    refused: int = 0
    retrying: int = 0
    refused_unsent: int = 0  # before a claim: caps already reached, or token unreadable
    refused_unsent_late: int = 0  # claimed, but past the lateness cap when its slot came
    lost_claim: int = 0  # another runner changed the row between our read and our claim
    lost_lease: int = 0  # our lease had expired at settle: the row was left as it was
    lateness_p50_ms: int = 0  # due_at → the moment a request left, over this tick's sends
    lateness_max_ms: int = 0
    d1_statements: int = 0
    d1_round_trips: int = 0
    # A platform limit of the invocation (D1 queries, subrequests) refused a call: 1, else 0.
    limit_reached: int = 0
    handed_back: int = 0  # claimed, never sent because of that limit: back to waiting, due now
    unsettled: int = 0  # sent or claimed, but the limit refused the settle: left to the lease
    held_back: int = 0  # a queue consumer left due for MAX_IN_FLIGHT_PER_INSTALLATION
    dispatched: int = 0  # rows a tick put in queue messages (the queue's consumers send them)
    messages: int = 0  # queue messages a tick sent, or a consumer was handed
    acked: int = 0  # a consumer's messages acknowledged (all they named is settled or not due)
    retried: int = 0  # a consumer's messages given back to the queue (something left due)
    queue_delay_ms: int = 0  # a consumer: the longest a message waited from its tick to here
    _lateness: list[int] = field(default_factory=list, init=False, repr=False)

    def sent(self, lateness_ms: int) -> None:
        self.sends += 1
        self._lateness.append(max(0, lateness_ms))
        self._order()

    def withdrawn(self, lateness_ms: int) -> None:
        """A send counted by `sent` that the platform refused before it left."""
        self.sends -= 1
        self._lateness.remove(max(0, lateness_ms))
        self._order()

    def _order(self) -> None:
        ordered = sorted(self._lateness)
        self.lateness_p50_ms = ordered[(len(ordered) - 1) // 2] if ordered else 0
        self.lateness_max_ms = ordered[-1] if ordered else 0

    def ended(self, status: Status) -> None:
        """A sent claim settled as `completed`, `refused` or `retrying`."""
        if status == Status.COMPLETED:
            self.completed += 1
        elif status == Status.RETRYING:
            self.retrying += 1
        else:
            self.refused += 1

    def outcomes(self) -> dict[Status, int]:
        """How sent claims ended, by the status each settled in."""
        return {
            Status.COMPLETED: self.completed,
            Status.REFUSED: self.refused,
            Status.RETRYING: self.retrying,
        }

    def as_record(self) -> dict[str, int]:
        return {name: value for name, value in asdict(self).items() if not name.startswith("_")}

    @classmethod
    def from_record(cls, record: Mapping[str, object]) -> TickReport:
        """Read a stored record; fields it lacks (an older plugin wrote it) count zero."""
        known = {f.name for f in fields(cls) if not f.name.startswith("_")}
        return cls(**{k: int(v) for k, v in record.items() if k in known and isinstance(v, int)})
