"""The runner's one engine: batches of any kind of work (`Work`) claimed, sent through one
invocation's connection slots and settled within one budget; and the report of what it did.

The next batch is claimed once every item of the current one holds a slot (a request's
timeout never runs while it waits). The budget is checked before each batch but the first, at
the batch's most expensive; a platform limit (`LimitReached`) ends the loop as the budget
does, and what was claimed and not sent is handed back.
"""

from __future__ import annotations

import asyncio
from bisect import insort
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from typing import Generic, Protocol, TypeVar

from scheduling.domain.notifications import DeliveryStatus
from scheduling.domain.outcomes import Status
from scheduling.domain.times import cumulative_buckets, percentile
from scheduling.limits import D1_QUERIES, INVOCATION_LIMITS, InvocationLimit, refused_as
from scheduling.ports import LimitReached
from scheduling.repository.round_trips import RoundTrips
from scheduling.services import Services, log

# -- the budget ------------------------------------------------------------------------------------


@dataclass(init=False)
class Budget:
    """An allowance per invocation limit, by its name (`ms`, `queries`, `sends`), each
    checked against the next batch at its most expensive; `reserved_queries` D1 statements
    are held back for what is written last (the invocation's record)."""

    allowed: dict[str, int]
    reserved_queries: int

    def __init__(self, *, reserved_queries: int = 1, **allowed: int) -> None:
        missing = {limit.name for limit in INVOCATION_LIMITS} - allowed.keys()
        if missing:
            raise TypeError(f"no allowance for {', '.join(sorted(missing))}")
        self.allowed = allowed
        self.reserved_queries = reserved_queries

    @classmethod
    def of(cls, services: Services, *, reserved_queries: int = 1) -> Budget:
        """The configured allowances, each lowered to a platform limit an earlier invocation
        of this isolate met (an operator on Workers Free who never set the 50s)."""
        config, met = services.config, services.limits_met
        allowed = {}
        for limit in INVOCATION_LIMITS:
            figure = config.allowance(limit)
            if limit.refused_as is not None:
                figure = min(figure, met.get(limit.refused_as, figure))
            allowed[limit.name] = figure
        return cls(reserved_queries=reserved_queries, **allowed)

    def allowance(self, limit: InvocationLimit) -> int:
        return self.allowed[limit.name]

    def allows(self, **spent: int) -> bool:
        """Whether work that would bring the invocation to `spent` (by `InvocationLimit.spent`,
        the reserved statements not included) may start; a limit not named is not spent."""
        unknown = spent.keys() - {limit.spent for limit in INVOCATION_LIMITS}
        if unknown:
            raise TypeError(f"no invocation limit counts {', '.join(sorted(unknown))}")
        if D1_QUERIES.spent in spent:
            spent[D1_QUERIES.spent] += self.reserved_queries
        return all(
            limit.allows(spent[limit.spent], self.allowance(limit))
            for limit in INVOCATION_LIMITS
            if limit.spent in spent
        )


# -- what an invocation did ------------------------------------------------------------------------


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
        self.lateness_p50_ms = percentile(self._lateness, 0.5)
        self.lateness_p99_ms = percentile(self._lateness, 0.99)
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
        """Sends at most each of `times.BOUNDS_MS` late (cumulative)."""
        return cumulative_buckets(self._lateness)

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


# -- the engine ------------------------------------------------------------------------------------

Item = TypeVar("Item")
Done = TypeVar("Done")


@dataclass(frozen=True)
class Batch(Generic[Item]):
    """What one claim won: the items to send, under one lease token, claimed at `claimed_at`.
    `last`: the source had no more (nothing is claimed after it)."""

    items: Sequence[Item]
    lease_token: str
    last: bool = False
    claimed_at: int = 0


class Work(Protocol[Item, Done]):
    """One kind of work: how a batch is claimed, how one item is sent, how a batch settles.
    `Done` is an item's end (settled, handed back, or never sent)."""

    batch_size: int

    def cost(self) -> int:
        """The most D1 statements one batch can cost, claim and settle included."""

    async def claim(self, engine: Engine) -> Batch[Item] | None:
        """The next batch; None ends the work for this invocation, unless it `follows`."""

    def follows(self) -> bool:
        """Whether a batch in flight may make more due once it settles (a release's next
        item): the engine then waits for a settle and claims again rather than ending."""

    async def unslotted(self, item: Item) -> Done | None:
        """The item's end when it has nothing to send (it needs no slot); else None."""

    def share_of(self, item: Item) -> str | None:
        """Whose share of the slots the item's send counts in (None: no one's)."""

    def ready(self, item: Item, at: int) -> Done | None:
        """The last check once the item holds its slot: its end unsent, or None to send."""

    async def send(self, item: Item, at: int) -> Done:
        """Send it (counted in the report); `LimitReached`: nothing left, the count undone."""

    def handed_back(self, item: Item, at: int) -> Done:
        """Claimed, never sent (a platform limit): waiting again, due at `at`."""

    async def settle(self, batch: Batch[Item], done: list[Done]) -> None: ...


async def _admitted(admitted: asyncio.Event, batch: asyncio.Task[None]) -> bool:
    """Wait until every item of `batch` holds a slot; False when the batch ended first (it
    raised), so the loop fails at once instead of waiting for an admission that never comes."""
    waiting = asyncio.ensure_future(admitted.wait())
    try:
        await asyncio.wait((waiting, batch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    return admitted.is_set()


class Slots:
    """An invocation's connection slots (SEND_CONCURRENCY), handed out in the order asked,
    save that while another installation has sends in the invocation, one holds at most its
    share of them (MAX_SLOTS_PER_INSTALLATION): a slow Dee Wan never holds every slot, and alone
    it holds them all. A send its installation's share holds back lets later ones pass, counts
    as admitted (`blocked`), and its installation is left out of the claims (`held_back`)."""

    def __init__(self, count: int, share: int) -> None:
        self.free = count
        self.share = share
        self.present: Counter[str] = Counter()  # sends of a claimed batch not yet ended
        self.holding: Counter[str] = Counter()
        self.held_back: Counter[str] = Counter()
        self._queue: list[_Asking] = []
        self._changed = asyncio.Event()

    async def take(self, key: str | None, blocked: Callable[[], None]) -> None:
        """A slot for a send counted in `key`'s share (None: in no one's)."""
        asking = _Asking(key, blocked, asyncio.get_running_loop().create_future())
        self._queue.append(asking)
        self._hand_out()
        try:
            await asking.slot
        except asyncio.CancelledError:
            if asking.slot.done() and not asking.slot.cancelled():
                self.give_back(key)
            else:
                self._queue.remove(asking)
                self._unblock(asking)
            raise

    def give_back(self, key: str | None) -> None:
        self.free += 1
        if key is not None:
            self.holding[key] -= 1
        self._hand_out()

    def _hand_out(self) -> None:
        for asking in list(self._queue):
            if asking.slot.cancelled():  # its sender leaves the queue as it ends
                continue
            if asking.key is not None and not self._may_hold(asking.key):
                if not asking.held_back:
                    asking.held_back = True
                    self.held_back[asking.key] += 1
                    asking.blocked()
                continue
            if not self.free:
                continue
            self._queue.remove(asking)
            self._unblock(asking)
            self.free -= 1
            if asking.key is not None:
                self.holding[asking.key] += 1
            asking.slot.set_result(None)

    def _may_hold(self, key: str) -> bool:
        return self.holding[key] < self.share or not (+self.present).keys() - {key}

    def arrive(self, keys: Sequence[str | None]) -> None:
        """A batch's sends, present from its claim until each ends (`leave`)."""
        self.present.update(key for key in keys if key is not None)

    def leave(self, key: str | None) -> None:
        if key is not None:
            self.present[key] -= 1
            self._hand_out()

    def _unblock(self, asking: _Asking) -> None:
        if asking.held_back and asking.key is not None:
            self.held_back[asking.key] -= 1
            self._changed.set()

    async def until_one_passes(self, keys: Sequence[str]) -> None:
        """Until one of `keys` has no send held back by its share."""
        while all(self.held_back[key] for key in keys):
            self._changed.clear()
            await self._changed.wait()


@dataclass(eq=False)
class _Asking:
    key: str | None
    blocked: Callable[[], None]
    slot: asyncio.Future[None]
    held_back: bool = False


class OnEngine:
    """A work reads the invocation's services, report and clock from its engine."""

    engine: Engine

    @property
    def services(self) -> Services:
        return self.engine.services

    @property
    def report(self) -> TickReport:
        return self.engine.report

    def clock(self) -> int:
        return self.engine.clock()


class Engine:
    """One invocation's slots, budget and clock. `now` is its instant (its elapsed time is
    `clock() - now`); `trips` counts its D1 statements, `report` its subrequests."""

    def __init__(
        self,
        services: Services,
        trips: RoundTrips,
        report: TickReport,
        clock: Callable[[], int],
        *,
        now: int,
        budget: Budget,
    ) -> None:
        self.services = services
        self.trips = trips
        self.report = report
        self.clock = clock
        self.now = now
        self.budget = budget
        config = services.config
        self.slots = Slots(config.send_concurrency, config.max_slots_per_installation)
        self.limit: LimitReached | None = None
        self.claims = 0  # claim rounds of this invocation, of any work
        self.clock_calls = 0  # the watchdog's calls to installations' clocks
        self._in_flight: list[asyncio.Task[None]] = []

    def subrequests(self) -> int:
        report = self.report
        return report.sends + report.delivery_sends + self.clock_calls

    def spent(self) -> dict[str, int]:
        """What the invocation has spent toward each limit (by `InvocationLimit.spent`)."""
        return {
            "elapsed_ms": self.clock() - self.now,
            "statements": self.trips.statements,
            "sends": self.subrequests(),
        }

    def reached(self, limit: LimitReached) -> None:
        """A platform limit refused a call: nothing more is claimed or sent in this invocation,
        and later ones of this isolate budget below what this one had used."""
        used = self.spent()[refused_as(limit.kind).spent]
        met = self.services.limits_met
        # Each refusal notes it: sends counted as they left and refused meanwhile are
        # withdrawn, so the last refusal sees what really went out.
        met[limit.kind] = min(used, met.get(limit.kind, used))
        if self.limit is not None:
            return
        self.limit = limit
        self.report.limit_reached = 1
        self.report.platform_limit = 1
        log.warning(
            "the invocation's %s limit was reached: it stops claiming, hands back what it has"
            " not sent, and leaves the rest for the next invocation (later invocations here"
            " stay below it)",
            limit.kind,
        )

    def room(self, work: Work[Item, Done]) -> bool:
        """Time, D1 statements and subrequests left for one more batch of `work` at its most
        expensive, the settles not yet sent counted in full. What is left over stays due for
        the next invocation (the operator sees it as backlog)."""
        return self.limit is None and self.allows(
            statements=(len(self.unsettled()) + 1) * work.cost(), sends=work.batch_size
        )

    def allows(self, **more: int) -> bool:
        """Whether the budget has room for `more` (by `InvocationLimit.spent`) beyond what the
        invocation has spent toward each of its limits."""
        spent = self.spent()
        for counted, amount in more.items():
            spent[counted] += amount
        return self.budget.allows(**spent)

    def unsettled(self) -> list[asyncio.Task[None]]:
        """Batches started and not yet settled."""
        return [task for task in self._in_flight if not task.done()]

    async def run(self, work: Work[Item, Done]) -> None:
        """Roll batches of `work` until it has none, the budget is spent or a platform limit
        is reached; returns once every batch it started has settled."""
        self._in_flight = []
        try:
            while True:
                if self.claims and not self.room(work):
                    self.report.limit_reached = 1  # the rest waits for the next invocation
                    break
                self.claims += 1
                batch = await work.claim(self)
                if batch is None:
                    if await self._settled_one(work):
                        continue
                    break
                if batch.items:
                    admitted = asyncio.Event()
                    sending = asyncio.create_task(self._send_and_settle(work, batch, admitted))
                    self._in_flight.append(sending)
                    if not await _admitted(admitted, sending):
                        break  # the batch failed before it was admitted: raised below
                if self.limit is not None or batch.last:
                    break
        except LimitReached as limit:
            self.reached(limit)
        except BaseException as stopping:
            if not isinstance(stopping, Exception):  # cancelled: so are its sends
                for task in self.unsettled():
                    task.cancel()
            raise
        finally:
            outcomes = await asyncio.gather(*self._in_flight, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _settled_one(self, work: Work[Item, Done]) -> bool:
        """Nothing to claim now, but `work` follows: wait for one batch in flight to settle,
        then claim again (True); False when none is in flight or one failed (the run ends)."""
        waiting = self.unsettled()
        if not waiting or not work.follows():
            return False
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        return not any(task.cancelled() or task.exception() is not None for task in done)

    async def _send_and_settle(
        self, work: Work[Item, Done], batch: Batch[Item], admitted: asyncio.Event
    ) -> None:
        """Every item within a slot (`admitted` is set once each holds one or waits for its
        share), then the batch's settle."""
        left = set(range(len(batch.items)))

        def admit(index: int) -> None:
            left.discard(index)
            if not left:
                admitted.set()

        async def one(index: int, item: Item, key: str | None) -> Done:
            try:
                done = await work.unslotted(item)
                if done is not None:
                    admit(index)
                    return done
                await self.slots.take(key, partial(admit, index))
                try:
                    admit(index)
                    return await self._send(work, item)
                finally:
                    self.slots.give_back(key)
            finally:
                self.slots.leave(key)

        keys = [work.share_of(item) for item in batch.items]
        self.slots.arrive(keys)
        sends = (one(i, item, keys[i]) for i, item in enumerate(batch.items))
        done = list(await asyncio.gather(*sends))
        await work.settle(batch, done)

    async def _send(self, work: Work[Item, Done], item: Item) -> Done:
        started = self.clock()
        done = work.ready(item, started)
        if done is not None:
            return done
        if self.limit is not None:
            return work.handed_back(item, started)
        try:
            return await work.send(item, started)
        except LimitReached as limit:  # refused before it left: nothing was sent
            self.reached(limit)
            return work.handed_back(item, self.clock())
