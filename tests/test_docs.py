"""The Time and Runner tables of the docs are the contract: every row is driven through the code.

A row the parser does not understand fails, so the tables cannot drift from
the behaviour silently in either direction.
"""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
import yaml

from scheduling.dee_wan import classify
from scheduling.domain.outcomes import (
    REFUSAL_CODES,
    SUCCESS_CODES,
    Caps,
    OutcomeKind,
    Status,
    after_attempt,
    backoff_ms,
    cap_reached,
)
from scheduling.domain.times import ResolvedTime, TimeRefusal, resolve_local_time
from scheduling.domain.wording import CODES
from scheduling.domain.wording import STATUS as STATUS_WORDS
from scheduling.operator.status import status_json
from scheduling.ports import OutboundResponse, TransportError, TransportTimeout
from scheduling.repository.history import Backlog, LastTick
from tests.support.app import FakeClock, make_app, memory_db
from tests.support.docs import fenced, page, section, table_cells, table_lines
from tests.support.metrics import scrape

CODE = re.compile(r"`([^`]+)`")
TIME = page("reference/time.md")
RUNNER = page("operators/runner.md")
STATUS = "operators/status.md"


def two_columns(text: str, first_column: str) -> list[tuple[str, str]]:
    """A two-column table as (left, right) cells, header dropped."""
    return [(left, right) for left, right in table_cells(text, first_column)]


# -- Time ---------------------------------------------------------------------------------

TIME_ROWS = two_columns(TIME, "Input")


def stated_now() -> str:
    """The instant the Time table's heading says its rows are read at: `now: `…Z``."""
    found = re.search(
        r"now: `(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)`", table_lines(TIME, "Input")[0]
    )
    assert found, "the Time table's heading must state the now its rows are read at"
    return found.group(1)


STATED_NOW = datetime.fromisoformat(stated_now().replace("Z", "+00:00"))


def test_the_time_table_states_its_now_and_its_rows_depend_on_it() -> None:
    # Read a year later, the future rows would be refused as past: the stated now matters.
    later = STATED_NOW.replace(year=2027)
    local, zone, fold, expected = time_case(0)
    assert not expected.startswith("refused")
    refused = resolve_local_time(local, zone, fold, now=later)
    assert isinstance(refused, TimeRefusal)
    assert refused.code == "past_time"


def time_case(index: int) -> tuple[str, str, str | None, str]:
    """(local, zone, fold, expected) for a row; `same` reuses the previous row's input."""
    left, right = TIME_ROWS[index]
    if left.startswith("same"):
        local, zone, _, _ = time_case(index - 1)
    else:
        values = CODE.findall(left)
        assert len(values) >= 2, f"Time row {index + 1}: input needs `local` `zone`: {left!r}"
        local, zone = values[0], values[1]
    fold_match = re.search(r"fold `(earlier|later)`", left)
    fold = fold_match.group(1) if fold_match else None
    if "fold" in left and "no fold" not in left:
        assert fold, f"Time row {index + 1}: unreadable fold in {left!r}"
    return local, zone, fold, right


def test_time_table_has_every_refusal_code() -> None:
    refusals = {CODE.findall(right)[0] for _, right in TIME_ROWS if right.startswith("refused")}
    assert refusals == {
        "nonexistent_local_time",
        "ambiguous_local_time",
        "unknown_timezone",
        "fixed_offset_zone",
        "past_time",
    }


@pytest.mark.parametrize("index", range(len(TIME_ROWS)))
def test_time_table_row(index: int) -> None:
    local, zone, fold, expected = time_case(index)
    result = resolve_local_time(local, zone, fold, now=STATED_NOW)
    if expected.startswith("refused"):
        code = CODE.findall(expected)[0]
        assert isinstance(result, TimeRefusal), f"row {index + 1}: expected {code}, got {result}"
        assert result.code == code
        # `offers `a`, `b``: the refusal's one-click choices, the closest first.
        offered = [r.value for r in result.retries]
        if "offers nothing" in expected:
            assert offered == [], f"row {index + 1}"
        elif "offers" in expected:
            wanted = CODE.findall(expected.split("offers", 1)[1])
            assert offered[: len(wanted)] == wanted, f"row {index + 1}: offered {offered}"
    else:
        instant = CODE.findall(expected)
        assert instant, f"Time row {index + 1}: result needs a `YYYY-MM-DD HH:MM UTC`"
        assert isinstance(result, ResolvedTime), f"row {index + 1}: refused {result}"
        due = datetime.strptime(instant[0], "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
        assert result.due_at_ms == due.timestamp() * 1000, f"row {index + 1}"
        stored = (
            CODE.findall(expected.split("stored as", 1)[1])[0] if "stored as" in expected else zone
        )
        assert (result.local_time, result.timezone) == (local, stored)


# -- Runner -------------------------------------------------------------------------------

RUNNER_ROWS = two_columns(RUNNER, "Dee Wan answer")
NOW = 1_782_900_000_000
LIMITS = Caps(max_attempts=5, max_lateness_ms=900_000, max_retry_after_ms=300_000, lease_ms=60_000)


def answer(
    status: int,
    code: str | None = None,
    *,
    raw: bytes | None = None,
    retry_after: str | None = None,
) -> OutboundResponse:
    body = raw if raw is not None else json.dumps({"code": code} if code else {}).encode()
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return OutboundResponse(status, headers, body)


def check_plain_codes(left: str, right: str) -> None:
    """`<status> `code` / `code`` rows: completed, or refused with no retry."""
    status = int(left.split()[0])
    codes = CODE.findall(left)
    assert codes, f"Runner row {left!r} names no code"
    for code in codes:
        outcome = classify(answer(status, code), now_ms=NOW)
        if right == "`completed`":
            assert outcome.kind is OutcomeKind.COMPLETED, (status, code)
            plan = after_attempt(
                outcome, attempt=1, due_at=NOW, now=NOW, caps=LIMITS, rng=random.Random(1)
            )
            assert (plan.status, plan.result_code) == ("completed", code)
        else:
            assert right == "`refused`, no retry", f"unexpected result {right!r}"
            assert (outcome.kind, outcome.code) == (OutcomeKind.REFUSED, code), (status, code)
            plan = after_attempt(
                outcome, attempt=1, due_at=NOW, now=NOW, caps=LIMITS, rng=random.Random(1)
            )
            assert (plan.status, plan.next_attempt_at) == ("refused", None)


def check_untrusted(left: str, right: str) -> None:
    assert CODE.findall(right) == ["refused", "untrusted_response"]
    cases = {
        "status/code mismatch": [
            answer(200, "invalid_request"),
            answer(409, "transition_applied"),
            answer(403, "content_not_found"),
            answer(422, "workflow_conflict"),
            answer(200, None),
        ],
        "bad JSON": [answer(200, raw=b"{"), answer(404, raw=b"<html>"), answer(200, raw=b'"ok"')],
        "3xx": [answer(s, "transition_applied") for s in (301, 302, 303, 307, 308)],
        "other status": [answer(s, "transition_applied") for s in (201, 204, 405, 410, 418, 501)],
    }
    named = [part.strip() for part in left.split(",")]
    assert set(named) == set(cases), f"untrusted row lists {named}"
    for name in named:
        for response in cases[name]:
            outcome = classify(response, now_ms=NOW)
            assert (outcome.kind, outcome.code) == (OutcomeKind.REFUSED, "untrusted_response"), name


def check_rate_limited(left: str, right: str) -> None:
    assert right.startswith("`retrying` at `Retry-After`")
    assert "seconds" in right
    assert "HTTP date" in right
    seconds = classify(answer(429, "slow_down", retry_after="120"), now_ms=NOW)
    assert (seconds.kind, seconds.retry_after_ms) == (OutcomeKind.RETRY, 120_000)
    date = format_datetime(datetime.fromtimestamp((NOW + 90_000) / 1000, UTC), usegmt=True)
    dated = classify(answer(429, raw=b"", retry_after=date), now_ms=NOW)
    assert (dated.kind, dated.retry_after_ms) == (OutcomeKind.RETRY, 90_000)
    plan = after_attempt(seconds, attempt=1, due_at=NOW, now=NOW, caps=LIMITS, rng=random.Random(1))
    assert (plan.status, plan.next_attempt_at) == ("retrying", NOW + 120_000)
    missing = classify(answer(429), now_ms=NOW)
    assert (missing.kind, missing.retry_after_ms) == (OutcomeKind.RETRY, None)


def check_transient(left: str, right: str) -> None:
    statuses = [int(s) for s in re.findall(r"\b5\d\d\b", left)]
    assert statuses == [500, 502, 503, 504]
    assert "network failure" in left
    assert "timeout (10 s)" in left
    assert "backoff 15 s·2^(n-1) capped 5 min, jitter 50–100 %" in right
    failures: list[OutboundResponse | TransportError] = [answer(s, "oops") for s in statuses]
    failures += [
        answer(503, raw=b"<html>busy</html>"),
        TransportError("reset"),
        TransportTimeout("10 s"),
    ]
    for failure in failures:
        assert classify(failure, now_ms=NOW).kind is OutcomeKind.RETRY
    rng = random.Random(3)
    for attempt in range(1, 9):
        base = min(15_000 * 2 ** (attempt - 1), 300_000)
        delays = [backoff_ms(attempt, rng) for _ in range(200)]
        assert base * 0.5 <= min(delays)
        assert max(delays) <= base


def check_exhausted(left: str, right: str) -> None:
    assert CODE.findall(left) == [
        "MAX_ATTEMPTS",
        "due_at + MAX_LATENESS_MS",
        "Retry-After",
        "MAX_RETRY_AFTER_MS",
    ]
    assert right == "`refused` `retry_exhausted`, nothing more sent"
    retry = classify(answer(503, "busy"), now_ms=NOW)
    rng = random.Random(5)
    # past MAX_ATTEMPTS: the fifth failure ends it; nothing more may be sent
    assert (
        after_attempt(retry, attempt=5, due_at=NOW, now=NOW, caps=LIMITS, rng=rng).result_code
        == "retry_exhausted"
    )
    assert cap_reached(attempts_so_far=5, due_at=NOW, now=NOW, caps=LIMITS) is not None
    assert cap_reached(attempts_so_far=4, due_at=NOW, now=NOW, caps=LIMITS) is None
    # past the lateness cap: no send, and no retry planned beyond it
    assert cap_reached(attempts_so_far=0, due_at=NOW, now=NOW + 900_001, caps=LIMITS) is not None
    assert cap_reached(attempts_so_far=0, due_at=NOW, now=NOW + 900_000, caps=LIMITS) is None
    late = after_attempt(retry, attempt=1, due_at=NOW, now=NOW + 899_000, caps=LIMITS, rng=rng)
    assert (late.status, late.result_code) == ("refused", "retry_exhausted")
    # Retry-After beyond MAX_RETRY_AFTER_MS
    long_wait = classify(answer(429, retry_after="301"), now_ms=NOW)
    plan = after_attempt(long_wait, attempt=1, due_at=NOW, now=NOW, caps=LIMITS, rng=rng)
    assert (plan.status, plan.result_code) == ("refused", "retry_exhausted")


def check_row(left: str, right: str) -> None:
    if re.match(r"^\d{3} `", left):
        check_plain_codes(left, right)
    elif left.startswith("status/code mismatch"):
        check_untrusted(left, right)
    elif left == "429":
        check_rate_limited(left, right)
    elif left.startswith("500/502/503/504"):
        check_transient(left, right)
    elif left.startswith("past `MAX_ATTEMPTS`"):
        check_exhausted(left, right)
    else:
        pytest.fail(f"Runner table row nobody taught this test: {left!r}")


@pytest.mark.parametrize(("left", "right"), RUNNER_ROWS, ids=[row[0][:40] for row in RUNNER_ROWS])
def test_runner_table_row(left: str, right: str) -> None:
    check_row(left, right)


def test_runner_table_names_every_code_the_classifier_knows() -> None:
    named = {
        code
        for left, _ in RUNNER_ROWS
        if re.match(r"^\d{3} `", left)
        for code in CODE.findall(left)
    }
    assert named == set(SUCCESS_CODES) | set(REFUSAL_CODES)


def test_a_row_nobody_updated_fails() -> None:
    with pytest.raises(AssertionError):
        check_row("401 `plugin_unauthorized`", "`retrying`")
    with pytest.raises(AssertionError):
        check_row("409 `transition_applied`", "`completed`")
    with pytest.raises(pytest.fail.Exception):
        check_row("418 teapot", "`completed`")


# -- Operator status ----------------------------------------------------------------------


def test_the_status_example_has_the_shape_the_route_answers() -> None:
    [shown] = fenced(section(STATUS, "Operator status"), "json")
    example = json.loads(shown)
    last = LastTick(at=1_000, duration_ms=5, report={"due": 1, "claimed": 1, "completed": 1})
    overdue = Backlog(1, "sch_1", "ins_1", 0)
    answer = status_json(200_000, last, overdue, {})
    assert example.keys() == answer.keys()
    assert example["last_tick"].keys() == answer["last_tick"].keys()
    assert example["schedules"].keys() == answer["schedules"].keys()
    assert example["finished_last_24h"].keys() == answer["finished_last_24h"].keys()
    assert example["stalled_after_ms"] == answer["stalled_after_ms"]


# -- Metrics and alerting (issue 21) ----------------------------------------------------------


async def _scraped() -> tuple[dict[str, str], set[str]]:
    """What /admin/metrics exposes after one tick: family types, and every sample name."""
    db = memory_db()
    app = make_app(db, FakeClock())
    await app.tick(app.services.clock.now_ms())
    types, samples = await scrape(app)
    db.close()
    return types, {name for name, _ in samples}


async def test_every_metric_series_is_in_the_docs_and_every_one_there_is_exposed() -> None:
    rows = re.findall(
        r"^\| `(scheduling_[a-z_]+)` \| (gauge|counter|histogram) \|",
        section(STATUS, "Metrics: `GET /admin/metrics`"),
        re.MULTILINE,
    )
    documented = {
        (name.removesuffix("_total") if kind == "counter" else name): kind for name, kind in rows
    }
    types, _ = await _scraped()
    assert documented == types
    assert all(name.endswith("_total") for name, kind in rows if kind == "counter")


async def test_the_alert_rules_name_series_the_metrics_route_exposes() -> None:
    [block] = fenced(section(STATUS, "Alerting"), "yaml")
    rules = yaml.safe_load(block)["groups"][0]["rules"]
    _, exposed = await _scraped()
    expressions = {rule["alert"]: rule["expr"] for rule in rules}
    for expression in expressions.values():
        named = set(re.findall(r"\bscheduling_[a-z_]+", expression))
        assert named, expression
        assert named <= exposed, (expression, named - exposed)
    # The three the operator asked for: an old overdue backlog, any failed tick, a stall.
    assert expressions == {
        "SchedulingOverdue": "scheduling_oldest_overdue_age_seconds > 300",
        "SchedulingTickFailed": "increase(scheduling_ticks_failed_total[10m]) > 0",
        "SchedulingStalled": "scheduling_stalled == 1",
    }


# -- What an editor reads (docs/editors/statuses.md) ----------------------------------------

STATUSES = page("editors/statuses.md")


def test_the_editors_status_table_is_what_the_cards_say() -> None:
    rows = table_cells(STATUSES, "The card says | Status")
    shown = {CODE.findall(status)[0]: words for words, status, _ in rows}
    assert shown == {status.value: words for status, words in STATUS_WORDS.items()}
    assert [CODE.findall(status)[0] for _, status, _ in rows] == [s.value for s in Status]


def test_the_editors_result_table_quotes_each_result_as_the_card_writes_it() -> None:
    rows = table_cells(STATUSES, "The card says | What to do")
    quoted = {CODE.findall(code)[0]: sentence for sentence, _, code in rows}
    results = {*SUCCESS_CODES, *REFUSAL_CODES, "untrusted_response", "retry_exhausted"}
    results.add("token_unreadable")
    assert set(quoted) == results
    assert quoted == {code: CODES[code] for code in results}
