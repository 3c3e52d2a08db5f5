"""One runner tick: claim due schedules batch by batch, send each within a connection slot,
settle each batch under its lease, until nothing is due or the tick's budget is spent.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from scheduling import dee_wan
from scheduling.domain import installation_token
from scheduling.domain.installation_token import TOKEN_UNREADABLE
from scheduling.domain.localtime import rfc3339
from scheduling.domain.outcomes import Outcome
from scheduling.domain.retry_policy import (
    REFUSED_LATE,
    RETRY_EXHAUSTED,
    Limits,
    Settlement,
    after_attempt,
    may_send,
    too_late,
)
from scheduling.events import emit
from scheduling.ports import Clock, Statement
from scheduling.repository import ticks
from scheduling.repository.runner_store import Claimed, DueRow, RunnerStore, Settle, batch_cost
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


@dataclass(frozen=True)
class Claim:
    row: DueRow
    attempt: int
    token: str  # opened installation token; lives only for this tick


@dataclass(frozen=True)
class Attempt:
    claim: Claim
    started_at: int
    outcome: Outcome | None  # None: past the lateness cap when its slot came, nothing sent
    finished_at: int


@dataclass(frozen=True)
class Invocation:
    """A cron invocation: the minute it stands for, and the wall clock when it began.

    Workers bounds neither how late an invocation is delivered nor how far its
    `scheduledTime` then lies behind the real time, so the tick's instant is the later
    of the two: a late delivery can never make a late send look on time.
    """

    scheduled_time: int
    started: int

    @classmethod
    def begin(cls, clock: Clock, scheduled_time: int) -> Invocation:
        return cls(scheduled_time, clock.now_ms())

    @property
    def at(self) -> int:
        """The tick's instant (epoch ms)."""
        return max(self.scheduled_time, self.started)

    @property
    def cron_delay_ms(self) -> int:
        """How late the invocation was delivered (0 when on time or early)."""
        return max(0, self.started - self.scheduled_time)


async def tick(services: Services, invocation: Invocation) -> dict[str, int]:
    """Run one tick for `invocation`; returns its counts, as recorded and logged."""
    return (await _Tick(services, invocation).run()).as_record()


class _Tick:
    def __init__(self, services: Services, invocation: Invocation) -> None:
        config = services.config
        self.services = services
        self.now = invocation.at
        self.started = invocation.started
        self.limits = Limits.from_config(config)
        self.batch_size = config.max_rows_per_tick
        self.concurrency = config.send_concurrency
        self.budget_ms = config.tick_budget_ms
        self.max_queries = config.max_d1_queries_per_tick
        self.max_sends = config.max_sends_per_tick
        self.store = RunnerStore(services.db)
        self.report = TickReport(cron_delay_ms=invocation.cron_delay_ms)
        self._tokens: dict[str, str | None] = {}

    def clock(self) -> int:
        """The tick's instant advanced by the real time spent since the invocation began.

        Every decision within the tick reads this: lateness, leases, retries.
        """
        return self.now + max(0, self.services.clock.now_ms() - self.started)

    def elapsed_ms(self) -> int:
        return self.clock() - self.now

    async def run(self) -> TickReport:
        """Batches roll: the next is claimed once every claim of the current one holds a slot,
        so its sends take over the slots as the last wave frees them."""
        slots = asyncio.Semaphore(self.concurrency)
        in_flight: list[asyncio.Task[None]] = []
        try:
            rows = await self.store.due(self.now, self.batch_size)
            while rows:
                self.report.batches += 1
                self.report.due += len(rows)
                lease_token = self.services.crypto.random_token()
                claims, refused = await self._claim(rows, lease_token)
                if not claims and not refused:
                    break  # another runner changed every row first: leave the rest to it
                if claims:
                    admitted = asyncio.Event()
                    in_flight.append(
                        asyncio.create_task(self._send_batch(claims, lease_token, slots, admitted))
                    )
                    await admitted.wait()
                if not self._room_for_another_batch(sum(not task.done() for task in in_flight)):
                    break
                rows = await self.store.due(self.clock(), self.batch_size)
        finally:
            failures = [
                outcome
                for outcome in await asyncio.gather(*in_flight, return_exceptions=True)
                if isinstance(outcome, BaseException)
            ]
        if failures:
            raise failures[0]
        await self.store.write([], record=self._record)
        emit("runner_tick", at=rfc3339(self.now), duration_ms=self.elapsed_ms(), **self._counts())
        return self.report

    async def _send_batch(
        self,
        claims: list[Claim],
        lease_token: str,
        slots: asyncio.Semaphore,
        admitted: asyncio.Event,
    ) -> None:
        """Send every claim within a slot, then settle them all under the batch's lease."""
        waiting = len(claims)

        async def in_slot(claim: Claim) -> Attempt:
            nonlocal waiting
            async with slots:
                waiting -= 1
                if waiting == 0:
                    admitted.set()
                return await self._attempt(claim)

        attempts = await asyncio.gather(*(in_slot(claim) for claim in claims))
        settles = [self._settle(attempt) for attempt in attempts]
        lost = await self.store.settle(lease_token, settles, self.clock())
        self.report.lost_lease += len(lost)
        for schedule_id in lost:
            log.warning(
                "schedule %s: lease lost before settle; left to its new runner", schedule_id
            )

    def _room_for_another_batch(self, unsettled_batches: int) -> bool:
        """Time, D1 queries and subrequests left for one more batch at its most expensive.

        Rows left over stay due for the next tick (the operator sees them as backlog).
        """
        # Settles not yet sent (counted in full), the next batch, and the tick's record.
        unsettled = unsettled_batches * batch_cost(self.batch_size)
        queries = self.store.statements + unsettled + batch_cost(self.batch_size) + 1
        return (
            self.elapsed_ms() < self.budget_ms
            and queries <= self.max_queries
            and self.report.sends + self.batch_size <= self.max_sends
        )

    async def _claim(self, rows: list[DueRow], lease_token: str) -> tuple[list[Claim], list[str]]:
        """Decide each row before any send: refuse it unsent, or claim it."""
        at = self.clock()
        refusals: list[tuple[DueRow, str]] = []
        wanted: list[DueRow] = []
        for row in rows:
            if not may_send(
                attempts_so_far=row.attempt_count, due_at=row.due_at, now=at, limits=self.limits
            ):
                refusals.append((row, RETRY_EXHAUSTED))
            elif await self._token(row) is None:
                refusals.append((row, TOKEN_UNREADABLE))
            else:
                wanted.append(row)
        won, refused = await self.store.claim(
            wanted, refusals, lease_token, at, self.limits.lease_ms
        )
        self.report.refused_unsent += len(refused)
        self.report.claimed += len(won)
        self.report.lost_claim += len(wanted) - len(won)
        return [self._claimed(c) for c in won], refused

    def _claimed(self, claimed: Claimed) -> Claim:
        token = self._tokens[claimed.row.installation_id]
        assert token is not None
        return Claim(claimed.row, claimed.attempt, token)

    async def _token(self, row: DueRow) -> str | None:
        """The installation's token, opened once per tick; None when TOKEN_KEY cannot open it."""
        if row.installation_id not in self._tokens:
            self._tokens[row.installation_id] = await installation_token.open_token(
                self.services.crypto, row.installation_id, row.token_sealed
            )
        return self._tokens[row.installation_id]

    async def _attempt(self, claim: Claim) -> Attempt:
        """Runs once the claim holds a connection slot: the cap is checked at the last moment."""
        started = self.clock()
        if too_late(due_at=claim.row.due_at, now=started, limits=self.limits):
            return Attempt(claim, started, None, started)
        self.report.sent(started - claim.row.due_at)
        outcome = await dee_wan.send_transition(
            self.services.http, claim.row, claim.token, self.clock
        )
        return Attempt(claim, started, outcome, self.clock())

    def _settle(self, attempt: Attempt) -> Settle:
        claim, outcome = attempt.claim, attempt.outcome
        if outcome is None:
            self.report.refused_unsent_late += 1
            return _settle_row(claim, REFUSED_LATE)
        plan = after_attempt(
            outcome,
            attempt=claim.attempt,
            due_at=claim.row.due_at,
            now=attempt.finished_at,
            limits=self.limits,
            rng=self.services.rng,
        )
        self.report.ended(plan.status)
        return _settle_row(claim, plan, attempt, outcome)

    def _counts(self) -> dict[str, int]:
        self.report.d1_statements = self.store.statements
        self.report.d1_round_trips = self.store.round_trips
        return self.report.as_record()

    def _record(self) -> Statement:
        """The tick's record, built last so it counts the round trip that carries it."""
        return ticks.record(self.store.db, self.now, self.elapsed_ms(), self._counts())


def _settle_row(
    claim: Claim,
    plan: Settlement,
    attempt: Attempt | None = None,
    outcome: Outcome | None = None,
) -> Settle:
    """`attempt` and `outcome` are given when a request left; without them nothing was sent."""
    return Settle(
        schedule_id=claim.row.id,
        attempt=claim.attempt,
        status=plan.status,
        result_code=plan.result_code,
        next_attempt_at=plan.next_attempt_at,
        sent=outcome is not None,
        started_at=attempt.started_at if attempt else None,
        finished_at=attempt.finished_at if attempt else None,
        attempt_code=outcome.code if outcome else None,
        http_status=outcome.http_status if outcome else None,
    )
