"""One batch of the runner's work: claim due rows, send each claim's command within a
connection slot, and settle them all under the batch's lease.

A tick rolls batches through one `BatchRunner`; a queue consumer does the same with the
rows its messages name (`drain.py` rolls them for both).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scheduling import dee_wan
from scheduling.domain import installation_token
from scheduling.domain.installation_token import TOKEN_UNREADABLE
from scheduling.domain.outcomes import RETRY_EXHAUSTED
from scheduling.domain.retry_policy import (
    REFUSED_LATE,
    Caps,
    after_attempt,
    cap_reached,
    handed_back,
    too_late,
)
from scheduling.domain.schedule import Attempt
from scheduling.domain.statuses import Status
from scheduling.ports import LimitReached
from scheduling.repository.runner_store import Claim, DueRow, RunnerStore, SettledClaim, Unsent
from scheduling.runner.outbox_events import EventMaker
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


@dataclass(frozen=True)
class Claimed:
    """What one claim round trip decided for a batch's rows."""

    won: list[Claim]
    refused: list[str]  # ended unsent before any claim (caps reached, token unreadable)
    held: list[str] = field(default_factory=list)  # left due by the per-installation cap


@dataclass(frozen=True)
class Settled:
    """A batch once its sends have answered: how each claim ended, which settles found their
    lease taken over, and whether the settle was written at all (a platform limit can refuse
    it: the claims then stay leased and are reclaimed after their lease)."""

    claims: list[SettledClaim]
    lost_lease: list[str]
    written: bool


class BatchRunner:
    """Claims, sends and settles batches, counting into `report`.

    `clock` is the runner's clock: every decision (a claim, the lateness cap when a
    request leaves, a retry's plan, a settle) reads it. Installation tokens are
    opened once per runner and live only as long as it does.

    `cap`, for a queue consumer, is MAX_IN_FLIGHT_PER_INSTALLATION enforced in D1 by the
    claim itself: no installation ever has more live claims, whoever holds them, so never
    more requests in flight. (A tick sending inline claims without it, as it always did:
    its SEND_CONCURRENCY slots bound it.)
    """

    def __init__(
        self,
        services: Services,
        store: RunnerStore,
        report: TickReport,
        clock: Callable[[], int],
        *,
        cap: int | None = None,
    ) -> None:
        config = services.config
        self.services = services
        self.store = store
        self.report = report
        self.clock = clock
        self.cap = cap
        self.caps = Caps(
            max_attempts=config.max_attempts,
            max_lateness_ms=config.max_lateness_ms,
            max_retry_after_ms=config.max_retry_after_ms,
            lease_ms=config.lease_ms,
        )
        self._tokens: dict[str, str | None] = {}
        self.events = EventMaker(services)
        self.limit: LimitReached | None = None

    def reached(self, limit: LimitReached) -> None:
        """A platform limit refused a call: nothing more is claimed or sent in this invocation,
        and later ones of this isolate budget below what this one had used."""
        sent = self.report.sends + self.report.webhook_sends
        used = sent if limit.kind == "subrequests" else self.store.statements
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

    async def claim(self, rows: Sequence[DueRow], lease_token: str) -> Claimed:
        """Decide each row before any send: refuse it unsent, or claim it."""
        at = self.clock()
        refusals: list[Unsent] = []
        wanted: list[DueRow] = []
        for row in rows:
            cap = cap_reached(
                attempts_so_far=row.attempt_count, due_at=row.due_at, now=at, caps=self.caps
            )
            if cap is not None:
                refusals.append((row, RETRY_EXHAUSTED, cap))
            elif await self._token(row) is None:
                refusals.append((row, TOKEN_UNREADABLE, None))
            else:
                wanted.append(row)
        made = (self.events.unsent(row, code, at, ended_by=by) for row, code, by in refusals)
        events = [event for event in made if event is not None]
        lease_ms = self.caps.lease_ms
        held: list[str] = []
        if self.cap is None:
            won, refused = await self.store.claim(
                wanted, refusals, lease_token, at, lease_ms, events
            )
        else:
            won, refused, held = await self.store.claim_within(
                wanted, refusals, lease_token, at, lease_ms, self.cap, events
            )
        self.report.refused_unsent += len(refused)
        codes = {row.id: code for row, code, _ in refusals}
        for schedule_id in refused:
            self.report.refused_with(codes[schedule_id])
        self.report.claimed += len(won)
        self.report.held_back += len(held)
        self.report.lost_claim += len(wanted) - len(won) - len(held)
        return Claimed(won, refused, held)

    async def send_and_settle(
        self,
        claims: Sequence[Claim],
        lease_token: str,
        slots: asyncio.Semaphore,
        admitted: asyncio.Event,
    ) -> Settled:
        """Send every claim within a slot, then settle them all under the batch's lease.
        `admitted` is set once every claim holds a slot (the next batch may be claimed)."""
        waiting = len(claims)

        async def in_slot(claim: Claim) -> SettledClaim:
            nonlocal waiting
            async with slots:
                waiting -= 1
                if waiting == 0:
                    admitted.set()
                return await self._send(claim)

        settled = list(await asyncio.gather(*(in_slot(claim) for claim in claims)))
        try:
            lost = await self.store.settle(lease_token, settled, self.clock())
        except LimitReached as limit:
            self.reached(limit)
            self.report.unsettled += len(settled)
            log.warning(
                "%d claims could not be settled (D1 refused): their lease runs out and they are"
                " claimed again, with the same idempotency key",
                len(settled),
            )
            return Settled(settled, [], written=False)
        self.report.lost_lease += len(lost)
        kept = {done.claim.row.id for done in settled} - set(lost)
        for done in settled:
            code = done.settlement.result_code
            if done.settlement.status == Status.REFUSED and done.claim.row.id in kept and code:
                self.report.refused_with(code)
        for schedule_id in lost:
            log.warning(
                "schedule %s: lease lost before settle; left to its new runner", schedule_id
            )
        return Settled(settled, lost, written=True)

    async def _token(self, row: DueRow) -> str | None:
        """The installation's token, opened once; None when TOKEN_KEY cannot open it."""
        if row.installation_id not in self._tokens:
            self._tokens[row.installation_id] = await installation_token.open_token(
                self.services.crypto, row.installation_id, row.token_sealed
            )
        return self._tokens[row.installation_id]

    async def _send(self, claim: Claim) -> SettledClaim:
        """Runs once the claim holds a connection slot: the cap is checked at the last moment,
        and the schedule's next step is planned from the answer."""
        row = claim.row
        started = self.clock()
        if too_late(due_at=row.due_at, now=started, caps=self.caps):
            self.report.refused_unsent_late += 1
            return SettledClaim(claim, REFUSED_LATE, None, self.events.late(claim, started))
        if self.limit is not None:
            self.report.handed_back += 1
            return SettledClaim(claim, handed_back(row.status, started), None)
        token = self._tokens[row.installation_id]
        assert token is not None  # claimed only when it opened
        self.report.sent(started - row.due_at)
        try:
            outcome = await dee_wan.send_transition(
                self.services.http, row.base_url, row.command, token, self.clock
            )
        except LimitReached as limit:  # refused before it left: nothing was sent
            self.report.withdrawn(started - row.due_at)
            self.reached(limit)
            self.report.handed_back += 1
            return SettledClaim(claim, handed_back(row.status, self.clock()), None)
        finished = self.clock()
        settlement = after_attempt(
            outcome,
            attempt=claim.attempt,
            due_at=row.due_at,
            now=finished,
            caps=self.caps,
            rng=self.services.rng,
        )
        self.report.ended(settlement.status)
        attempt = Attempt(claim.attempt, started, finished, outcome.code, outcome.http_status)
        event = self.events.sent(claim, settlement, outcome, finished)
        return SettledClaim(claim, settlement, attempt, event)
