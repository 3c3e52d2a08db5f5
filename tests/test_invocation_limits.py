"""A runtime limit is one entry of `limits.INVOCATION_LIMITS` (issue 36): for each entry,
the configuration reads and validates its variable, the budget bounds an invocation by it
(lowered to what the platform refused at before, when the platform enforces it), the Workers
runtime knows the platform's refusal of it by its text, and the reference documents it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scheduling.config import VARIABLES, Configuration
from scheduling.limits import INVOCATION_LIMITS, InvocationLimit, refused_as
from scheduling.runner.engine import Budget
from scheduling.runtimes.workers.bindings import limit_of
from tests.support.app import FakeClock, base_env, make_app, memory_db

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "configuration.md"
each_limit = pytest.mark.parametrize("limit", INVOCATION_LIMITS, ids=lambda limit: limit.name)


@each_limit
def test_the_configuration_reads_and_validates_each_limit(limit: InvocationLimit) -> None:
    assert limit.variable in VARIABLES
    assert Configuration.from_mapping(base_env()).allowance(limit) == limit.default
    bad = Configuration.from_mapping(base_env(**{limit.variable: "0"}))
    assert bad.problems == {limit.variable: "input should be greater than 0"}


@each_limit
def test_the_budget_bounds_an_invocation_by_each_limit(limit: InvocationLimit) -> None:
    env = base_env(**{limit.variable: "1000"})
    services = make_app(memory_db(), FakeClock(), env=env).services
    if limit.refused_as is not None:
        services.limits_met[limit.refused_as] = 7
    budget = Budget.of(services, reserved_queries=0)
    assert budget.allowance(limit) == (1_000 if limit.refused_as is None else 7)
    spent = {other.spent: 0 for other in INVOCATION_LIMITS}
    edge = budget.allowance(limit) - (1 if limit.ends_at_allowance else 0)
    assert budget.allows(**{**spent, limit.spent: edge})
    assert not budget.allows(**{**spent, limit.spent: edge + 1})


@each_limit
def test_the_platforms_refusal_of_each_limit_is_known_by_its_text(limit: InvocationLimit) -> None:
    if limit.refusal is None:
        assert limit.refused_as is None  # the platform does not refuse it: nothing to know
        return
    assert limit.refused_as is not None
    assert refused_as(limit.refused_as) is limit
    reached = limit_of(f"Error: {limit.refusal.upper()}.")  # the texts are plain words
    assert reached is not None
    assert reached.kind == limit.refused_as


@each_limit
def test_each_limit_is_in_the_configuration_reference(limit: InvocationLimit) -> None:
    rows = re.findall(r"^\| `(\w+)` \| `(\d+)` \|", REFERENCE.read_text("utf-8"), re.M)
    assert (limit.variable, str(limit.default)) in rows
