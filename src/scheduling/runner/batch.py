"""One batch of the runner's work: claim due rows, send each claim's command within a
connection slot, and settle them all under the batch's lease.

A tick rolls batches through one `BatchRunner`; anything else that is handed
due rows (a queue consumer, say) claims, sends and settles them the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from scheduling import dee_wan
from scheduling.domain import installation_token
from scheduling.domain.installation_token import TOKEN_UNREADABLE
from scheduling.domain.outcomes import RETRY_EXHAUSTED
from scheduling.domain.retry_policy import REFUSED_LATE, Caps, after_attempt, may_send, too_late
from scheduling.domain.schedule import Attempt
from scheduling.domain.statuses import Status
from scheduling.repository.runner_store import Claim, DueRow, RunnerStore, SettledClaim
from scheduling.runner.outbox_events import EventMaker
from scheduling.runner.report import TickReport
from scheduling.services import Services, log


class BatchRunner:
    """Claims, sends and settles batches, counting into `report`.

    `clock` is the runner's clock: every decision (a claim, the lateness cap when a
    request leaves, a retry's plan, a settle) reads it. Installation tokens are
    opened once per runner and live only as long as it does.
    """

    def __init__(
        self,
        services: Services,
        store: RunnerStore,
        report: TickReport,
        clock: Callable[[], int],
    ) -> None:
        config = services.config
        self.services = services
        self.store = store
        self.report = report
        self.clock = clock
        self.caps = Caps(
            max_attempts=config.max_attempts,
            max_lateness_ms=config.max_lateness_ms,
            max_retry_after_ms=config.max_retry_after_ms,
            lease_ms=config.lease_ms,
        )
        self._tokens: dict[str, str | None] = {}
        self.events = EventMaker(services)

    async def claim(self, rows: Sequence[DueRow], lease_token: str) -> tuple[list[Claim], int]:
        """Decide each row before any send: refuse it unsent, or claim it. Returns the claims
        won and how many rows were refused."""
        at = self.clock()
        refusals: list[tuple[DueRow, str]] = []
        wanted: list[DueRow] = []
        for row in rows:
            if not may_send(
                attempts_so_far=row.attempt_count, due_at=row.due_at, now=at, caps=self.caps
            ):
                refusals.append((row, RETRY_EXHAUSTED))
            elif await self._token(row) is None:
                refusals.append((row, TOKEN_UNREADABLE))
            else:
                wanted.append(row)
        events = [self.events.unsent(row, code, at) for row, code in refusals]
        won, refused = await self.store.claim(
            wanted,
            refusals,
            lease_token,
            at,
            self.caps.lease_ms,
            events=[event for event in events if event is not None],
        )
        self.report.refused_unsent += len(refused)
        codes = {row.id: code for row, code in refusals}
        for schedule_id in refused:
            self.report.refused_with(codes[schedule_id])
        self.report.claimed += len(won)
        self.report.lost_claim += len(wanted) - len(won)
        return won, len(refused)

    async def send_and_settle(
        self,
        claims: Sequence[Claim],
        lease_token: str,
        slots: asyncio.Semaphore,
        admitted: asyncio.Event,
    ) -> None:
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

        settled = await asyncio.gather(*(in_slot(claim) for claim in claims))
        lost = await self.store.settle(lease_token, settled, self.clock())
        self.report.lost_lease += len(lost)
        kept = {done.claim.row.id for done in settled} - set(lost)
        for done in settled:
            if done.settlement.status == Status.REFUSED and done.claim.row.id in kept:
                self.report.refused_with(done.settlement.result_code)
        for schedule_id in lost:
            log.warning(
                "schedule %s: lease lost before settle; left to its new runner", schedule_id
            )

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
        token = self._tokens[row.installation_id]
        assert token is not None  # claimed only when it opened
        self.report.sent(started - row.due_at)
        outcome = await dee_wan.send_transition(
            self.services.http, row.base_url, row.command, token, self.clock
        )
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
