"""scripts/test ends with one plain line of counts, read from pytest's summary."""

from __future__ import annotations

from scripts.pytest_counts import counts


def test_the_counts_of_the_last_summary_line() -> None:
    output = "\n".join(
        [
            "tests/test_x.py ....F",
            "FAILED tests/test_x.py::test_y - assert 1 == 2",
            "=== 1 failed, 1400 passed, 3 skipped, 2 errors in 301.23s (0:05:01) ===",
        ]
    )
    assert counts(output) == "1400 passed, 3 failed, 3 skipped"
    assert counts("== 27 passed in 2.59s ==") == "27 passed, 0 failed"
    assert counts("== 1 error in 0.50s ==") == "0 passed, 1 failed"


def test_no_summary_is_said() -> None:
    assert counts("ERROR: file or directory not found: tests/nope.py\n") == "no test summary"
