"""scripts/mutation.py without running mutmut: the map names modules and tests that exist, the
equivalents file reads as documented (one line of reason each, for mapped modules), and the
table counts a run as its docstring says."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import mutation
from scripts.mutation import Equivalent, Mutant, Result, Target

ROOT = Path(__file__).resolve().parents[1]


def test_the_map_names_modules_and_tests_that_exist() -> None:
    for module, target in mutation.MODULES.items():
        assert (ROOT / "src" / "scheduling" / module).is_file(), module
        assert target.tests, module
        for test in target.tests:
            assert (ROOT / test).is_file(), (module, test)
        assert 0 < target.threshold <= 1


def test_every_equivalent_mutant_has_a_one_line_reason_and_a_mapped_module() -> None:
    mapped = {mutation.dotted(module) for module in mutation.MODULES}
    listed = mutation.load_equivalents()
    assert listed
    for module, entries in listed.items():
        assert module in mapped, module
        for entry in entries:
            assert entry.function.startswith(module + "."), entry
            assert entry.mutant, entry
            assert entry.reason.strip(), entry
            assert "\n" not in entry.reason, entry


@pytest.mark.parametrize(
    "name",
    ["domain/times.py", "src/scheduling/domain/times.py", "scheduling.domain.times"],
)
def test_a_module_may_be_named_as_a_path_or_dotted(name: str) -> None:
    assert mutation.module_path(name) == "domain/times.py"


def test_an_unmapped_module_is_refused_with_the_known_ones() -> None:
    with pytest.raises(SystemExit, match=r"no tests are mapped to domain/wording\.py"):
        mutation.module_path("domain/wording.py")


def test_mutant_names_read_as_functions_and_methods() -> None:
    assert (
        mutation.function_of("scheduling.domain.times.x_percentile__mutmut_12")
        == "scheduling.domain.times.percentile"
    )
    assert (
        mutation.function_of("scheduling.runner.engine.xǁBudgetǁof__mutmut_2")
        == "scheduling.runner.engine.Budget.of"
    )


DIFF = "-    return ordered[rank - 1]\n+    return ordered[rank  -  2]"


def run(*statuses: str) -> Result:
    function = "scheduling.domain.times.percentile"
    mutants = [
        Mutant(f"{function[:-10]}x_percentile__mutmut_{i}", function, status, diff)
        for i, status in enumerate(statuses, 1)
        for diff in [{"killed": "", "no tests": "-    x = 1\n+    x = 2"}.get(status, DIFF)]
    ]
    return Result("domain/times.py", Target(("tests/test_lateness.py",)), mutants)


def test_the_score_counts_equivalents_out_and_timeouts_in() -> None:
    result = run("killed", "killed", "timeout", "survived", "survived", "no tests")
    equivalent = Equivalent("scheduling.domain.times.percentile", "return ordered[rank - 2]", "")
    mutation.match_equivalents(result, {"scheduling.domain.times": [equivalent]})
    # The entry names the mutated line (whitespace collapsed), so both survivors reading it match.
    assert [m.name.rsplit("_", 1)[1] for m in result.equivalent] == ["4", "5"]
    assert [m.status for m in result.survivors] == ["no tests"]
    assert (result.count("killed"), result.count("timeout")) == (2, 1)
    assert result.score == 3 / 4
    assert not result.passed  # under 90 %
    assert "| `domain/times.py` | 6 | 2 | 1 | 1 | 2 | 75.0% |" in mutation.table([result])


def test_an_entry_that_matches_no_survivor_is_a_problem() -> None:
    result = run("killed")
    stale = Equivalent("scheduling.domain.times.percentile", "return ordered[rank - 2]", "")
    mutation.match_equivalents(result, {"scheduling.domain.times": [stale]})
    assert result.score == 1.0
    assert len(result.problems) == 1
    assert not result.passed
