"""What one runner invocation (a tick or a clock's alarm) did, counted
exactly: logged as one JSON line, kept as a row of the tick history, and added to the
running totals behind /admin/metrics."""

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

from scheduling.domain import lateness
from scheduling.domain.delivery_policy import DeliveryStatus
from scheduling.domain.statuses import Status


@dataclass
class TickReport:
    """What one tick did, for its log line and history."""

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
    lateness_p99_ms: int = 0
    lateness_max_ms: int = 0
    d1_statements: int = 0
    d1_round_trips: int = 0
    # Notifications, every channel kind: outbox rows the tick's settles wrote, and the
    # deliveries it made.
    delivery_events: int = 0
    delivery_sends: int = 0  # requests that left for an endpoint
    deliveries_delivered: int = 0
    deliveries_retrying: int = 0
    deliveries_failed: int = 0
    delivery_lost_lease: int = 0
    deliveries_handed_back: int = 0  # claimed, never sent because of a platform limit
    delivery_delay_max_ms: int = 0  # the event's settle → its delivery, over this tick's deliveries
    # 1: it stopped before it was done, at a budget (time, D1 queries, sends) or at a limit
    # of the platform (`platform_limit`); the rest waits for the next invocation.
    limit_reached: int = 0
    platform_limit: int = 0  # 1: D1 or fetch refused a call, the invocation's allowance used
    handed_back: int = 0  # claimed, never sent because of that limit: back to waiting, due now
    unsettled: int = 0  # sent or claimed, but the limit refused the settle: left to the lease
    held_back: int = 0  # left due for MAX_IN_FLIGHT_PER_INSTALLATION (a clock, the watchdog)
    # With an alarm clock per installation. A watchdog tick: the rows it took that no clock
    # had (sent or ended unsent), and the clocks it found set later than what they had due
    # (or unset). An alarm: how long it waited, awake, for its due second.
    watchdog: int = 0  # 1: a tick that ran as the clocks' watchdog
    caught: int = 0
    clocks_rearmed: int = 0
    waited_ms: int = 0
    _lateness: list[int] = field(default_factory=list, init=False, repr=False)
    _refusals: Counter[str] = field(default_factory=Counter, init=False, repr=False)

    def sent(self, lateness_ms: int) -> None:
        self.sends += 1
        insort(self._lateness, max(0, lateness_ms))
        self._order()

    def withdrawn(self, lateness_ms: int) -> None:
        """A send counted by `sent` that the platform refused before it left."""
        self.sends -= 1
        self._lateness.remove(max(0, lateness_ms))
        self._order()

    def _order(self) -> None:
        if not self._lateness:
            self.lateness_p50_ms = self.lateness_p99_ms = self.lateness_max_ms = 0
            return
        self.lateness_p50_ms = lateness.percentile(self._lateness, 0.5)
        self.lateness_p99_ms = lateness.percentile(self._lateness, 0.99)
        self.lateness_max_ms = self._lateness[-1]

    def ended(self, status: Status) -> None:
        """A sent claim settled as `completed`, `refused` or `retrying`."""
        if status == Status.COMPLETED:
            self.completed += 1
        elif status == Status.RETRYING:
            self.retrying += 1
        else:
            self.refused += 1

    def delivery_ended(self, status: DeliveryStatus, delay_ms: int) -> None:
        """A claimed delivery settled as delivered, waiting (to retry) or failed."""
        if status == DeliveryStatus.DELIVERED:
            self.deliveries_delivered += 1
            self.delivery_delay_max_ms = max(self.delivery_delay_max_ms, delay_ms)
        elif status == DeliveryStatus.WAITING:
            self.deliveries_retrying += 1
        else:
            self.deliveries_failed += 1

    def refused_with(self, code: str) -> None:
        """A schedule this tick ended `refused` (sent or not), by its result code."""
        self._refusals[code] += 1

    def refusals(self) -> dict[str, int]:
        """The schedules this tick ended `refused`, by result code."""
        return dict(self._refusals)

    def lateness_buckets(self) -> tuple[int, ...]:
        """Sends at most each of `lateness.BOUNDS_MS` late (cumulative)."""
        return lateness.cumulative_buckets(self._lateness)

    def lateness_sum_ms(self) -> int:
        return sum(self._lateness)

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
