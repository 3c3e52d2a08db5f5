"""A queue consumer invocation: the rows its messages name, claimed, sent and settled
exactly as a tick does (the engine's `send_work.py`), with its own connection slots and
budgets, and no installation past MAX_IN_FLIGHT_PER_INSTALLATION however many consumers run.

A message is acknowledged only once every row it names is settled by this invocation, or
found not due (settled already, claimed by another runner, or not yet due again). Otherwise
it is retried: a row the cap held back, one the budget or a platform limit left, one handed
back unsent, or one whose settle was refused. Acknowledging happens after every settle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from scheduling.domain.claims import DueRow
from scheduling.events import emit
from scheduling.ports import QueueMessage
from scheduling.repository.leases import Leases
from scheduling.runner import messages
from scheduling.runner.invocation import Invocation, RunnerInvocation
from scheduling.runner.messages import Dispatched
from scheduling.runner.report import TickReport
from scheduling.runner.send_work import Claimed, SendWork, Settled
from scheduling.services import Services, log

# A message retried for what it left due comes back after a second, and a second more for
# each ten deliveries it had, up to ten: held back behind a slow Dee Wan by its installation's
# cap, its 100 retries then last about nine minutes rather than a hundred seconds before the
# dead-letter queue (Queues counts seconds).
RETRY_DELAY_S = 1
MAX_RETRY_DELAY_S = 10


def retry_delay_s(attempts: int) -> int:
    """The delay before a message delivered `attempts` times (1 the first) comes back."""
    return min(MAX_RETRY_DELAY_S, RETRY_DELAY_S + (attempts - 1) // 10)


async def consume(services: Services, delivered: Sequence[QueueMessage]) -> dict[str, int]:
    """One queue consumer invocation over a delivered batch (the Worker's `queue()`, or a
    local consumer): claims, sends and settles what its messages name, then acknowledges
    or retries each message."""
    try:
        return await run_consumer(services, delivered)
    except Exception as exc:
        # Unacknowledged, the batch is delivered again; the type only, as for a tick.
        emit("runner_consume_failed", messages=len(delivered), error=type(exc).__name__)
        raise


async def run_consumer(services: Services, delivered: Sequence[QueueMessage]) -> dict[str, int]:
    """Consume one delivered batch; returns its counts, as logged."""
    return (await Consumer(services, delivered).run()).as_record()


class MessageRows:
    """The rows a consumer's messages name: read fresh, round-robin, and followed to their end.

    An installation whose cap held a row back is left aside until one of this invocation's
    own batches settles (its claims free room), so the rest keeps moving meanwhile.
    """

    apart = True

    def __init__(self, leases: Leases, named: Sequence[Dispatched]) -> None:
        self.leases = leases
        self.pending: dict[str, str] = {}  # schedule id -> installation, in message order
        for message in named:
            for installation, ids in message.ids.items():
                for schedule_id in ids:
                    self.pending.setdefault(schedule_id, installation)
        self.done: set[str] = set()
        self.parked: set[str] = set()

    async def next(self, now: int, limit: int, work: SendWork) -> list[DueRow]:
        while True:
            # In message order, a batch's worth at a time: messages finish one after another,
            # so one the budget never reached comes back untouched, not half done.
            window = [sid for sid, inst in self.pending.items() if inst not in self.parked]
            window = window[:limit]
            if window:
                rows = await self.leases.due_among(window, now, limit)
                for sid in window:
                    del self.pending[sid]
                taken = {row.id for row in rows}
                # The rest is not due: settled, someone else's, or not yet due again.
                self.done.update(sid for sid in window if sid not in taken)
                if rows:
                    return rows
                if not work.room():
                    work.report.limit_reached = 1
                    return []  # what is left comes back with its message
                continue
            waiting = work.engine.unsettled()
            if not self.parked or not waiting:
                return []
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            self.parked.clear()

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        won = {claim.row.id for claim in claimed.won}
        held = set(claimed.held)
        self.done.update(claimed.refused)
        for row in rows:
            if row.id in held:
                self.pending[row.id] = row.installation_id
                self.parked.add(row.installation_id)
            elif row.id not in won and row.id not in claimed.refused:
                self.done.add(row.id)  # another runner claimed or ended it first

    def settled(self, settled: Settled) -> None:
        if settled.written:
            self.done.update(s.claim.row.id for s in settled.claims if not s.handed_back)


class Consumer(RunnerInvocation):
    kind = "consumer"
    log_event = "runner_consume"

    def __init__(self, services: Services, delivered: Sequence[QueueMessage]) -> None:
        self.delivered = list(delivered)
        self.named = [messages.parse(message.body) for message in self.delivered]
        wall = services.clock.now_ms()
        ahead = max((m.ahead_ms for m in self.named if m is not None), default=0)
        report = TickReport(
            messages=len(self.delivered),
            queue_delay_ms=max(
                (max(0, wall - m.sent) for m in self.named if m is not None), default=0
            ),
        )
        super().__init__(
            services,
            Invocation(scheduled_time=wall + ahead, started=wall),
            report,
            cap=services.config.max_in_flight_per_installation,
        )

    async def _work(self) -> None:
        readable = [m for m in self.named if m is not None]
        # The messages delivered most often first: one the budget never reached before is
        # reached now, rather than retried behind fresher ones until the dead-letter queue.
        by_attempts = sorted(
            (pair for pair in zip(self.delivered, self.named, strict=True) if pair[1] is not None),
            key=lambda pair: -pair[0].attempts,
        )
        rows = MessageRows(self.leases, [named for _, named in by_attempts if named is not None])
        await self._send(rows)
        # The deliveries messages named (handed off by the settles of other invocations).
        deliveries = [d for m in readable for d in m.deliveries]
        handed = await self._deliver(deliveries) if deliveries else None
        # Every batch has settled: each message is acknowledged, or comes back.
        for message, named in zip(self.delivered, self.named, strict=True):
            if named is None:
                log.warning("queue message %s is not a runner message; acknowledged", message.id)
                message.ack()
                self.report.acked += 1
            elif all(sid in rows.done for sid in named.schedule_ids()) and (
                not named.deliveries or (handed is not None and handed.done_with(named.deliveries))
            ):
                message.ack()
                self.report.acked += 1
            else:
                message.retry(retry_delay_s(message.attempts))
                self.report.retried += 1
        # Its settles' events go out now, not a tick later (the acknowledgements stand).
        await self._deliver()
