"""Batches rolling through one invocation's connection slots within its budget: the loop a
tick runs over every due row, and a queue consumer over the rows its messages name.

The next batch is claimed as soon as every claim of the current one holds a slot, so its
sends take over the slots as the last wave frees them. Each batch settles on its own.
A platform limit (`LimitReached`) ends the loop as the budget does: nothing more is
claimed, what was claimed and not sent is handed back, and the rest stays due.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from scheduling.limits import batch_cost
from scheduling.ports import LimitReached
from scheduling.repository.runner_store import DueRow, RunnerStore
from scheduling.runner.batch import BatchRunner, Claimed, Settled
from scheduling.runner.budget import Budget
from scheduling.runner.report import TickReport


class RowSource(Protocol):
    """Where a drain's batches come from, and what it hears of them."""

    async def next(self, now: int, limit: int, drain: Drain) -> list[DueRow]:
        """Up to `limit` rows to claim now; none ends the drain."""
        ...

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None: ...

    def settled(self, settled: Settled) -> None: ...


class DueRows:
    """A tick's source: every due row, round-robin across installations."""

    def __init__(self, store: RunnerStore) -> None:
        self.store = store

    async def next(self, now: int, limit: int, drain: Drain) -> list[DueRow]:
        return await self.store.due(now, limit)

    def claimed(self, rows: Sequence[DueRow], claimed: Claimed) -> None:
        pass

    def settled(self, settled: Settled) -> None:
        pass


async def _admitted(admitted: asyncio.Event, batch: asyncio.Task[Settled]) -> bool:
    """Wait until every claim of `batch` holds a slot; False when the batch ended first (it
    raised), so the drain fails at once instead of waiting for an admission that never comes."""
    waiting = asyncio.ensure_future(admitted.wait())
    try:
        await asyncio.wait((waiting, batch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    return admitted.is_set()


class Drain:
    def __init__(
        self,
        batches: BatchRunner,
        store: RunnerStore,
        report: TickReport,
        *,
        now: int,
        clock: Callable[[], int],
        batch_size: int,
        concurrency: int,
        budget: Budget,
        new_token: Callable[[], str],
    ) -> None:
        self.batches = batches
        self.store = store
        self.report = report
        self.now = now
        self.clock = clock
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.budget = budget
        self.new_token = new_token
        self._in_flight: list[asyncio.Task[Settled]] = []

    async def run(self, source: RowSource) -> None:
        """Roll batches from `source` until it has none, the budget is spent or a platform
        limit is reached; returns once every batch it started has settled."""
        slots = asyncio.Semaphore(self.concurrency)
        try:
            rows = await source.next(self.now, self.batch_size, self)
            while rows:
                self.report.batches += 1
                self.report.due += len(rows)
                lease_token = self.new_token()
                claimed = await self.batches.claim(rows, lease_token)
                source.claimed(rows, claimed)
                if not claimed.won and not claimed.refused and not claimed.held:
                    break  # another runner changed every row first: leave the rest to it
                if claimed.won:
                    admitted = asyncio.Event()
                    batch = asyncio.create_task(
                        self._batch(source, claimed, lease_token, slots, admitted)
                    )
                    self._in_flight.append(batch)
                    if not await _admitted(admitted, batch):
                        break  # the batch failed before it was admitted: raised below
                if self.batches.limit is not None:
                    break
                if not self.room_for_another_batch():
                    self.report.limit_reached = 1  # the rest waits for the next invocation
                    break
                rows = await source.next(self.clock(), self.batch_size, self)
        except LimitReached as limit:
            self.batches.reached(limit)
        finally:
            failures = [
                outcome
                for outcome in await asyncio.gather(*self._in_flight, return_exceptions=True)
                if isinstance(outcome, BaseException)
            ]
        if failures:
            raise failures[0]

    def unsettled(self) -> list[asyncio.Task[Settled]]:
        """Batches started and not yet settled."""
        return [task for task in self._in_flight if not task.done()]

    async def _batch(
        self,
        source: RowSource,
        claimed: Claimed,
        lease_token: str,
        slots: asyncio.Semaphore,
        admitted: asyncio.Event,
    ) -> Settled:
        settled = await self.batches.send_and_settle(claimed.won, lease_token, slots, admitted)
        source.settled(settled)
        return settled

    def room_for_another_batch(self) -> bool:
        """Time, D1 queries and subrequests left for one more batch at its most expensive.

        Rows left over stay due for the next invocation (the operator sees them as backlog).
        """
        cost = batch_cost(self.batch_size, capped=self.batches.cap is not None)
        # Settles not yet sent (counted in full), and the next batch.
        unsettled = len(self.unsettled()) * cost
        return self.budget.allows(
            elapsed_ms=self.clock() - self.now,
            statements=self.store.statements + unsettled + cost,
            sends=self.report.sends + self.batch_size,
        )
