"""A tick with a queue: it sends nothing itself. It marks what is due in D1 and names it in
queue messages, round-robin across installations, and the queue's consumers claim, send and
settle it (`consume.py`), each invocation with its own six connections and budgets.

A round marks up to 100 messages' worth of rows in one statement and sends those messages
in one `sendBatch`. A row stays marked for LEASE_MS: the next tick leaves it to its message,
the one after dispatches it again if no consumer claimed it meanwhile (a message can be
lost). Duplicates are harmless: only a claim owns a row.
"""

from __future__ import annotations

from scheduling.domain.claims import DispatchedRow
from scheduling.limits import MAX_MESSAGES_PER_SEND
from scheduling.ports import LimitReached, QueueProducer, QueueUnavailable
from scheduling.repository.dispatch_marks import DispatchMarks
from scheduling.runner import messages
from scheduling.runner.engine import Engine, OnEngine
from scheduling.services import log


class Dispatch(OnEngine):
    """Rounds of marks and messages within the tick's engine's budget (no slots: a round is one
    statement and one call to the queue)."""

    def __init__(
        self, engine: Engine, marks: DispatchMarks, queue: QueueProducer, *, lag_ms: int = 0
    ) -> None:
        config = engine.services.config
        self.engine = engine
        self.marks = marks
        self.queue = queue
        self.rows_per_message = config.max_rows_per_tick
        self.rows_per_round = self.rows_per_message * MAX_MESSAGES_PER_SEND
        self.redispatch_after_ms = config.lease_ms
        self.queue_sends = 0
        # Only what has been due this long (the watchdog leaves the rest to the clocks).
        self.lag_ms = lag_ms

    async def run(self) -> None:
        """Rounds until nothing undispatched is due, the budget is spent or a limit is reached.
        Raises `QueueUnavailable` when the queue refuses (the round's marks are taken back,
        so the next tick dispatches those rows again)."""
        while True:
            if not self._room_for_another_round():
                self.report.limit_reached = 1  # the rest waits for the next tick
                return
            now = self.clock()
            due = now - self.lag_ms
            try:
                marked = await self.marks.mark(
                    due, due - self.redispatch_after_ms, self.rows_per_round
                )
            except LimitReached as limit:
                self.engine.reached(limit)
                return
            if not marked:
                return
            self.report.batches += 1
            self.report.due += len(marked)
            bodies = [
                messages.body(marked[i : i + self.rows_per_message], now, self._wall())
                for i in range(0, len(marked), self.rows_per_message)
            ]
            try:
                self.queue_sends += 1
                await self.queue.send_batch(bodies)
            except LimitReached as limit:
                self.engine.reached(limit)
                await self._take_back(marked, due)
                return
            except QueueUnavailable:
                await self._take_back(marked, due)
                raise
            self.report.dispatched += len(marked)
            self.report.messages += len(bodies)
            if len(marked) < self.rows_per_round:
                return

    def _wall(self) -> int:
        return self.services.clock.now_ms()

    async def _take_back(self, marked: list[DispatchedRow], marked_at: int) -> None:
        try:
            await self.marks.unmark([row.id for row in marked], marked_at)
        except LimitReached:
            # Left marked: dispatched again once the mark is older than LEASE_MS.
            log.warning("%d dispatch marks could not be taken back", len(marked))

    def _room_for_another_round(self) -> bool:
        """A round costs one statement (and one more if its messages must be taken back) and
        one call to the queue; the tick's record comes after."""
        engine = self.engine
        budget = engine.budget
        return (
            self.clock() - engine.now < budget.ms
            and engine.trips.statements + 2 + budget.reserved_queries <= budget.queries
            and self.queue_sends + 1 <= budget.sends
        )
