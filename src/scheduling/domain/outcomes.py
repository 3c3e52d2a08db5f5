"""A schedule's statuses and their groups; what an attempt at a transition came to, and what
happens to its schedule next.

The Runner table of docs/operators/runner.md is `RUNNER_TABLE`, as data: the Dee Wan client
classifies every answer by it (`rule_for`), so a new code of Dee Wan's is one row, and
`contract/plugin-contract.json` carries it to core. A `Retry-After`, Dee Wan's or an
endpoint's, is read one way. The retry policy's caps are absolute: nothing is sent past
`due_at + MAX_LATENESS_MS` or `MAX_ATTEMPTS`, and no retry is planned that would break either.
"""

from __future__ import annotations

import enum
import functools
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from enum import StrEnum

# -- statuses --------------------------------------------------------------------------------------


class Status(StrEnum):
    PENDING = "pending"  # waiting for its time
    RETRYING = "retrying"  # waiting for its next try
    RUNNING = "running"  # claimed by a runner, under a lease
    COMPLETED = "completed"  # Dee Wan applied the change (or had already)
    REFUSED = "refused"  # ended without the change: refused by Dee Wan, or past a cap
    CANCELLED = "cancelled"  # a person cancelled it
    SUPERSEDED = "superseded"  # a newer schedule for the same content and kind replaced it
    QUEUED = "queued"  # behind an earlier item of its release: not due until that one is done
    HELD = "held"  # ended unsent: known stale, or an earlier item of its release was not done


# Due once their time comes (the runner's due query reads only these).
DUE: tuple[Status, ...] = (Status.PENDING, Status.RETRYING)
# Still to be sent: a person may cancel them, and a new schedule supersedes them.
WAITING: tuple[Status, ...] = (*DUE, Status.QUEUED)
# At most one live schedule per installation + content + kind (index `schedules_one_live`).
LIVE: tuple[Status, ...] = (*WAITING, Status.RUNNING)
# Ended by the runner or a person (a replaced one is counted apart: `SUPERSEDED`).
ENDED: tuple[Status, ...] = (Status.COMPLETED, Status.REFUSED, Status.CANCELLED, Status.HELD)
# Ended without the change: refused (by Dee Wan or a cap), or held unsent. Each needs
# attention until it is settled, and may be tried again.
NOT_DONE: tuple[Status, ...] = (Status.REFUSED, Status.HELD)
# Nothing more happens to these.
FINISHED: tuple[Status, ...] = (
    Status.COMPLETED,
    Status.REFUSED,
    Status.CANCELLED,
    Status.SUPERSEDED,
    Status.HELD,
)


# The groups a person reads a listing in (the manage view's filters); their order is the
# default listing's order.
GROUPS: dict[str, tuple[Status, ...]] = {
    "attention": (Status.RETRYING, Status.REFUSED, Status.HELD),
    "upcoming": (Status.PENDING, Status.QUEUED, Status.RUNNING),
    "finished": (Status.COMPLETED, Status.CANCELLED, Status.SUPERSEDED),
}
# A refused (or held) schedule needs attention until it is settled (a site admin dismissed it, or a
# later schedule of the same content and change was done); then it counts as finished.
SETTLED_GROUP = "finished"


def group_of(status: Status, settled: bool = False, needs_repin: bool = False) -> str:
    """`needs_repin`: a waiting schedule a collision put out of date needs attention."""
    if settled and status in (Status.REFUSED, Status.HELD):
        return SETTLED_GROUP
    if needs_repin and status in (Status.PENDING, Status.QUEUED):
        return "attention"
    return next(name for name, statuses in GROUPS.items() if status in statuses)


def sql_list(statuses: Iterable[Status]) -> str:
    """`('pending', 'retrying')`: a group as SQL text, for statements built from constants."""
    return "(" + ", ".join(f"'{status.value}'" for status in statuses) + ")"


# -- outcomes and the Runner table -----------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One send of a schedule's command: started, and finished with Dee Wan's answer (or not:
    a start without a finish belongs to a runner that died)."""

    number: int
    started_at: int
    finished_at: int | None
    code: str | None
    http_status: int | None


class OutcomeKind(enum.Enum):
    COMPLETED = "completed"
    REFUSED = "refused"
    RETRY = "retry"


@dataclass(frozen=True)
class Outcome:
    """What one attempt to send a schedule's change came to."""

    kind: OutcomeKind
    code: str  # what the attempt row records
    http_status: int | None = None
    retry_after_ms: int | None = None  # only for 429 with a usable Retry-After


UNTRUSTED = "untrusted_response"
RETRY_EXHAUSTED = "retry_exhausted"


class EndedBy(enum.StrEnum):
    """Which cap ended a `retry_exhausted` schedule (`schedules.ended_by`, the webhook's
    `data.ended_by`)."""

    ATTEMPTS = "attempts"  # MAX_ATTEMPTS tries made
    LATENESS = "lateness"  # past due_at + MAX_LATENESS_MS
    RETRY_AFTER = "retry_after"  # Dee Wan asked to wait past MAX_RETRY_AFTER_MS


class Retry(enum.StrEnum):
    NONE = "none"  # the schedule ends
    RETRY_AFTER = "retry_after"  # at the answer's Retry-After (seconds or HTTP date)
    BACKOFF = "backoff"  # 15 s·2^(n-1) capped at 5 min, jitter 50–100 %


@dataclass(frozen=True)
class AnswerRule:
    """One row of the Runner table: which answers it covers and what the plugin does then.

    `result_code` None means the code the answer carried (`code_when_missing` when it
    carried none that looks like a code).
    """

    answer: str
    statuses: tuple[int, ...]  # the HTTP statuses it covers; () for no HTTP answer
    codes: tuple[str, ...] | None  # the codes that go with them; None: any code or none
    plugin_result: Status
    retry: Retry
    result_code: str | None = None
    code_when_missing: str | None = None

    @property
    def kind(self) -> OutcomeKind:
        return {
            Status.COMPLETED: OutcomeKind.COMPLETED,
            Status.REFUSED: OutcomeKind.REFUSED,
            Status.RETRYING: OutcomeKind.RETRY,
        }[self.plugin_result]


def _refused(status: int, *codes: str) -> AnswerRule:
    return AnswerRule(str(status), (status,), codes, Status.REFUSED, Retry.NONE)


RUNNER_TABLE: tuple[AnswerRule, ...] = (
    AnswerRule(
        "200", (200,), ("transition_applied", "idempotent_replay"), Status.COMPLETED, Retry.NONE
    ),
    _refused(400, "invalid_request"),
    _refused(401, "plugin_unauthorized"),
    _refused(403, "capability_refused", "requester_unauthorized"),
    _refused(404, "content_not_found"),
    _refused(
        409,
        "scheduled_target_stale",
        "workflow_conflict",
        "dependent_content",
        "idempotency_key_reused",
    ),
    _refused(422, "transition_unavailable", "transition_refused"),
    # A status/code mismatch, a body that is not JSON or has no code, a 3xx, any other status.
    AnswerRule("untrusted", (), None, Status.REFUSED, Retry.NONE, UNTRUSTED),
    AnswerRule(
        "429", (429,), None, Status.RETRYING, Retry.RETRY_AFTER, code_when_missing="rate_limited"
    ),
    AnswerRule(
        "5xx",
        (500, 502, 503, 504),
        None,
        Status.RETRYING,
        Retry.BACKOFF,
        code_when_missing="server_error",
    ),
    AnswerRule("network_failure", (), None, Status.RETRYING, Retry.BACKOFF, "network_error"),
    AnswerRule("timeout", (), None, Status.RETRYING, Retry.BACKOFF, "timeout"),
    # Past MAX_ATTEMPTS, past due_at + MAX_LATENESS_MS, or a Retry-After past MAX_RETRY_AFTER_MS.
    AnswerRule("past_a_cap", (), None, Status.REFUSED, Retry.NONE, RETRY_EXHAUSTED),
)
RULES = {rule.answer: rule for rule in RUNNER_TABLE}

# Each code core may send, with the one status it belongs to.
SUCCESS_CODES = {
    code: rule.statuses[0]
    for rule in RUNNER_TABLE
    if rule.plugin_result is Status.COMPLETED
    for code in rule.codes or ()
}
REFUSAL_CODES = {
    code: rule.statuses[0]
    for rule in RUNNER_TABLE
    if rule.plugin_result is Status.REFUSED
    for code in rule.codes or ()
}


def rule_for(status: int, code: str | None) -> AnswerRule | None:
    """The row of the Runner table an HTTP answer falls under: the row naming its status and
    its code, else the row for its status with any code; None when no row covers it (the
    answer cannot be trusted)."""
    exact, any_code = _index(RUNNER_TABLE)
    return exact.get((status, code)) or any_code.get(status)


@functools.cache
def _index(
    table: tuple[AnswerRule, ...],
) -> tuple[dict[tuple[int, str | None], AnswerRule], dict[int, AnswerRule]]:
    exact: dict[tuple[int, str | None], AnswerRule] = {}
    any_code: dict[int, AnswerRule] = {}
    for rule in table:
        for status in rule.statuses:
            if rule.codes is None:
                any_code.setdefault(status, rule)
            for code in rule.codes or ():
                exact.setdefault((status, code), rule)
    return exact, any_code


def outcome_of(
    rule: AnswerRule, code: str | None, status: int, retry_after_ms: int | None = None
) -> Outcome:
    """What an answer under `rule` came to: its code (the rule's own, the answer's, or the
    rule's when the answer had none), and its Retry-After where the rule waits for it."""
    result_code = rule.result_code or code or rule.code_when_missing
    assert result_code is not None  # a rule taking any code says what to record without one
    wait = retry_after_ms if rule.retry is Retry.RETRY_AFTER else None
    return Outcome(rule.kind, result_code, status, wait)


# -- Retry-After -----------------------------------------------------------------------------------

_DELTA_SECONDS = re.compile(r"[0-9]{1,10}")
_HTTP_DATE_MAX = 64


def parse_retry_after(value: str | None, *, now_ms: int) -> int | None:
    """Milliseconds to wait: delta-seconds (ASCII, at most 10 digits) or an HTTP date.

    None when absent or unusable; the runner then backs off as for a 5xx.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return int(value) * 1000
    if len(value) > _HTTP_DATE_MAX or not value.isascii():
        return None
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0, int(when.timestamp() * 1000) - now_ms)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# -- the retry policy ------------------------------------------------------------------------------

# The Runner table's backoff: 15 s·2^(n-1), capped at 5 min, then 50–100 % jitter.
BACKOFF_BASE_MS = 15_000
BACKOFF_CAP_MS = 300_000
JITTER = (0.5, 1.0)


@dataclass(frozen=True)
class Caps:
    """The limits a schedule's attempts live within."""

    max_attempts: int
    max_lateness_ms: int
    max_retry_after_ms: int
    lease_ms: int


@dataclass(frozen=True)
class Settlement:
    """Where a schedule stands after an attempt: its status and next attempt."""

    status: Status  # completed, refused or retrying; pending or retrying when handed back
    result_code: str | None  # None: the row keeps the code it had
    next_attempt_at: int | None = None
    ended_by: EndedBy | None = None  # which cap, when one ended it (`retry_exhausted`)


def exhausted(by: EndedBy) -> Settlement:
    return Settlement(Status.REFUSED, RETRY_EXHAUSTED, ended_by=by)


REFUSED_LATE = exhausted(EndedBy.LATENESS)


def handed_back(observed: Status, now: int) -> Settlement:
    """A claim that was never sent because the invocation reached a platform limit goes back
    to waiting as it was, due at once (its attempt is given back): pending stays pending, a
    retry or an expired lease waits as retrying, and its last code stays."""
    status = Status.PENDING if observed == Status.PENDING else Status.RETRYING
    return Settlement(status, None, now)


def too_late(*, due_at: int, now: int, caps: Caps) -> bool:
    """Past the lateness cap: checked before a claim and again right before the request leaves."""
    return now > due_at + caps.max_lateness_ms


def cap_reached(*, attempts_so_far: int, due_at: int, now: int, caps: Caps) -> EndedBy | None:
    """Before a claim: the cap that allows no more sends, or None while one more is allowed."""
    if attempts_so_far >= caps.max_attempts:
        return EndedBy.ATTEMPTS
    if too_late(due_at=due_at, now=now, caps=caps):
        return EndedBy.LATENESS
    return None


def backoff_ms(attempt: int, rng: random.Random) -> int:
    """15 s·2^(attempt-1), capped at 5 min, then 50–100 % jitter."""
    base = min(BACKOFF_BASE_MS * 2 ** (max(attempt, 1) - 1), BACKOFF_CAP_MS)
    return int(base * rng.uniform(*JITTER))


def after_attempt(
    outcome: Outcome, *, attempt: int, due_at: int, now: int, caps: Caps, rng: random.Random
) -> Settlement:
    """Where the schedule goes after attempt number `attempt` ended at `now` with `outcome`."""
    if outcome.kind is OutcomeKind.COMPLETED:
        return Settlement(Status.COMPLETED, outcome.code)
    if outcome.kind is OutcomeKind.REFUSED:
        return Settlement(Status.REFUSED, outcome.code)
    if attempt >= caps.max_attempts:
        return exhausted(EndedBy.ATTEMPTS)
    if outcome.retry_after_ms is not None:
        if outcome.retry_after_ms > caps.max_retry_after_ms:
            return exhausted(EndedBy.RETRY_AFTER)
        next_at = now + outcome.retry_after_ms
    else:
        next_at = now + backoff_ms(attempt, rng)
    if too_late(due_at=due_at, now=next_at, caps=caps):
        return exhausted(EndedBy.LATENESS)
    return Settlement(Status.RETRYING, outcome.code, next_at)
