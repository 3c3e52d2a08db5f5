"""An invocation's budget on known inputs: the configured figures, each lowered to the platform
limit an earlier invocation met (D1's as well as fetch's: issue 32's second gap), the
statements held back for the invocation's record, and each bound at its exact edge."""

from __future__ import annotations

import pytest

from scheduling.limits import RECORD_STATEMENTS
from scheduling.runner.engine import Budget
from scheduling.services import Services
from tests.support.app import FakeClock, base_env, make_app, memory_db


def services(**met: int) -> Services:
    env = base_env(TICK_BUDGET_MS="30000", MAX_D1_QUERIES_PER_TICK="50", MAX_SENDS_PER_TICK="40")
    built = make_app(memory_db(), FakeClock(), env=env).services
    built.limits_met.update(met)
    return built


def test_the_configured_budget() -> None:
    assert Budget.of(services()) == Budget(ms=30_000, queries=50, sends=40, reserved_queries=1)
    assert Budget.of(services(), reserved_queries=RECORD_STATEMENTS) == Budget(
        ms=30_000, queries=50, sends=40, reserved_queries=3
    )


@pytest.mark.parametrize(
    ("met", "queries", "sends"),
    [
        ({"d1": 20}, 20, 40),  # D1 refused after 20 statements: later invocations stay below
        ({"subrequests": 15}, 50, 15),
        ({"d1": 20, "subrequests": 15}, 20, 15),
        ({"d1": 50, "subrequests": 40}, 50, 40),
        ({"d1": 80, "subrequests": 90}, 50, 40),  # never above what is configured
        ({"d1": 0}, 0, 40),
    ],
)
def test_a_limit_met_earlier_lowers_its_own_budget(
    met: dict[str, int], queries: int, sends: int
) -> None:
    budget = Budget.of(services(**met), reserved_queries=3)
    assert budget == Budget(ms=30_000, queries=queries, sends=sends, reserved_queries=3)


def test_each_bound_at_its_edge() -> None:
    budget = Budget(ms=1_000, queries=50, sends=40, reserved_queries=3)
    assert budget.allows(elapsed_ms=999, statements=47, sends=40)
    assert not budget.allows(elapsed_ms=1_000, statements=0, sends=0)  # time is up
    assert not budget.allows(elapsed_ms=0, statements=48, sends=0)  # 48 + 3 reserved > 50
    assert not budget.allows(elapsed_ms=0, statements=0, sends=41)
    assert Budget(ms=1_000, queries=50, sends=40).allows(elapsed_ms=0, statements=49, sends=0)
    assert not Budget(ms=1_000, queries=50, sends=40).allows(elapsed_ms=0, statements=50, sends=0)


def test_work_is_checked_against_the_limits_it_spends_toward() -> None:
    budget = Budget(ms=1_000, queries=50, sends=0)
    assert budget.allows(elapsed_ms=0, statements=49)  # spends no subrequests (the purge)
    assert not budget.allows(elapsed_ms=0, statements=49, sends=1)
    with pytest.raises(TypeError, match="no invocation limit counts cpu_ms"):
        budget.allows(elapsed_ms=0, statements=0, sends=0, cpu_ms=1)


def test_a_budget_refuses_to_be_made_without_an_allowance_or_to_check_an_unknown_limit() -> None:
    """The refusals name what is missing or unknown, all of it, in order (issue 45 item 20:
    the messages the limits registry added were not checked)."""
    with pytest.raises(TypeError) as missing:
        Budget(ms=1_000)
    assert str(missing.value) == "no allowance for queries, sends"
    with pytest.raises(TypeError) as one:
        Budget(ms=1_000, queries=50)
    assert str(one.value) == "no allowance for sends"
    budget = Budget(ms=1_000, queries=50, sends=40)
    with pytest.raises(TypeError) as unknown:
        budget.allows(statements=1, gpu_ms=1, cpu_ms=1)
    assert str(unknown.value) == "no invocation limit counts cpu_ms, gpu_ms"
