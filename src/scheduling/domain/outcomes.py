"""What one attempt at a transition came to, and the Runner table that decides it.

The Runner table of docs/operators/runner.md is `RUNNER_TABLE`, as data: the Dee Wan client
classifies every answer by looking it up here (`rule_for`), so a new code of Dee Wan's is
one row; the retry policy plans by it, and
`contract/plugin-contract.json` carries it to core, whose plugin-contract test
checks it against core's own table.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from scheduling.domain.statuses import Status


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
