"""One runner tick: claim due schedules, send them concurrently, settle each under its lease."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from . import contexts
from .events import emit
from .localtime import rfc3339
from .outcomes import Outcome, classify
from .ports import (
    OutboundRequest,
    OutboundResponse,
    Statement,
    TransportError,
    UnreadableSecret,
)
from .repository import runner_queries as q
from .repository import ticks
from .retry_policy import RETRY_EXHAUSTED, Limits, may_send, settle
from .services import Services, log

SEND_TIMEOUT_S = 10.0
TOKEN_UNREADABLE = "token_unreadable"


@dataclass(frozen=True)
class Claim:
    row: q.DueRow
    lease_token: str
    token: str  # opened installation token; lives only for this tick

    @property
    def attempt(self) -> int:
        return self.row.attempt_count + 1


async def tick(services: Services, now: int) -> dict[str, int]:
    """Run one tick at instant `now` (epoch ms); returns its counts, as recorded and logged."""
    config = services.config
    limits = Limits.from_config(config)
    db = services.db
    started = services.clock.now_ms()
    rows = await q.due_rows(db, now, config.max_rows_per_tick)
    report: Counter[str] = Counter(due=len(rows), claimed=0)
    if not rows:
        return await _finish(services, now, started, report, [])

    claims, statements, unsent = await _prepare(services, rows, now, limits)
    changes = await q.run_batch(db, statements)
    won = _won_claims(claims, changes, len(unsent))
    report.update(
        refused_unsent=sum(changes[: len(unsent)]),
        claimed=len(won),
        lost_claim=len(claims) - len(won),
    )

    def elapsed_now() -> int:
        # `now` may be a chosen instant (tests, /__scheduled?time=); advance it by real time spent.
        return now + max(0, services.clock.now_ms() - started)

    outcomes = await asyncio.gather(*(_send(services, claim, elapsed_now) for claim in won))
    finished = elapsed_now()

    settles = []
    for claim, outcome in zip(won, outcomes, strict=True):
        plan = settle(
            outcome,
            attempt=claim.attempt,
            due_at=claim.row.due_at,
            now=finished,
            limits=limits,
            rng=services.rng,
        )
        settles.append(
            q.finish_attempt(
                db, claim.row.id, claim.attempt, outcome.code, outcome.http_status, finished
            )
        )
        settles.append(
            q.settle(
                db,
                claim.row.id,
                claim.lease_token,
                plan.status,
                plan.result_code,
                plan.next_attempt_at,
                finished,
            )
        )
        report[plan.status] += 1
    return await _finish(services, now, started, report, settles)


async def _finish(
    services: Services,
    now: int,
    started: int,
    report: Counter[str],
    settles: list[Statement],
) -> dict[str, int]:
    """Settle, and record the tick in the same batch; log it as one JSON line."""
    db = services.db
    duration = max(0, services.clock.now_ms() - started)
    changes = await q.run_batch(db, [*settles, ticks.record(db, now, duration, report)])
    lost = sum(1 for changed in changes[1 : len(settles) : 2] if not changed)
    if lost:
        # Rare (a lease expired mid-tick): one more write keeps the record exact.
        report["lost_lease"] = lost
        await q.run_batch(db, [ticks.record(db, now, duration, report)])
    emit("runner_tick", at=rfc3339(now), duration_ms=duration, **report)
    return dict(report)


async def _prepare(
    services: Services, rows: list[q.DueRow], now: int, limits: Limits
) -> tuple[list[Claim], list[Statement], list[q.DueRow]]:
    """Decide each row before any send: refuse it unsent, or claim it."""
    db = services.db
    tokens: dict[str, str | None] = {}
    unsent: list[tuple[q.DueRow, str]] = []
    claims: list[Claim] = []
    for row in rows:
        if not may_send(
            attempts_so_far=row.attempt_count, due_at=row.due_at, now=now, limits=limits
        ):
            unsent.append((row, RETRY_EXHAUSTED))
            continue
        if row.installation_id not in tokens:
            tokens[row.installation_id] = await _open_token(services, row)
        token = tokens[row.installation_id]
        if token is None:
            unsent.append((row, TOKEN_UNREADABLE))
            continue
        claims.append(Claim(row, services.crypto.random_token(), token))
    statements = [q.refuse_unsent(db, row, code, now) for row, code in unsent]
    for claim in claims:
        statements.extend(q.claim(db, claim.row, claim.lease_token, now, limits.lease_ms))
    return claims, statements, [row for row, _ in unsent]


def _won_claims(claims: list[Claim], changes: list[int], offset: int) -> list[Claim]:
    # Each claim is two statements; the first (the compare-and-set) tells who won.
    return [claim for i, claim in enumerate(claims) if changes[offset + 2 * i] == 1]


async def _open_token(services: Services, row: q.DueRow) -> str | None:
    try:
        return await services.crypto.open(
            row.token_sealed, contexts.installation_token(row.installation_id)
        )
    except UnreadableSecret:
        log.warning("installation %s: token does not open under TOKEN_KEY", row.installation_id)
        return None


def transition_request(row: q.DueRow, token: str) -> OutboundRequest:
    """Protocol §6. The body depends only on the stored schedule, so every retry is identical."""
    body = {
        "content_id": row.content_id,
        "kind": row.kind,
        "to": row.to_state,
        "version_id": row.version_id,
        "workflow_revision": row.workflow_revision,
        "requested_by": row.requested_by,
        "due_at": rfc3339(row.due_at),
    }
    return OutboundRequest(
        "POST",
        f"{row.base_url}/api/plugins/v1/transitions",
        {
            "authorization": f"Bearer {token}",
            "idempotency-key": row.idempotency_key,
            "content-type": "application/json",
            "accept": "application/json",
        },
        json.dumps(body, separators=(",", ":")).encode(),
        SEND_TIMEOUT_S,
    )


async def _send(services: Services, claim: Claim, clock: Callable[[], int]) -> Outcome:
    answer: OutboundResponse | TransportError
    try:
        answer = await services.http.send(transition_request(claim.row, claim.token))
    except TransportError as exc:
        answer = exc
    except Exception as exc:
        # Settle every claim exactly once, even when an adapter misbehaves.
        log.exception("schedule %s: send failed unexpectedly", claim.row.id)
        answer = TransportError(type(exc).__name__)
    return classify(answer, now_ms=clock())
