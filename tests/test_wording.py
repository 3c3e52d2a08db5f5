"""The words an editor reads for each code the plugin can store or answer with."""

from __future__ import annotations

import pytest

from scheduling.domain.outcomes import REFUSAL_CODES, RETRY_EXHAUSTED, SUCCESS_CODES, UNTRUSTED
from scheduling.domain.secrets import TOKEN_UNREADABLE
from scheduling.domain.wording import CODES, explain, explain_answer, support_detail

UNKNOWN = explain("no_such_code")

# What the runner stores as a result or an attempt's code, besides a 429's or a 5xx's own.
STORED = {
    *SUCCESS_CODES,
    *REFUSAL_CODES,
    UNTRUSTED,
    RETRY_EXHAUSTED,
    TOKEN_UNREADABLE,
    "timeout",
    "network_error",
}


@pytest.mark.parametrize("code", sorted(STORED))
def test_every_code_the_runner_stores_has_its_own_words(code: str) -> None:
    assert code in CODES
    assert explain_answer(code, None) == CODES[code] != UNKNOWN


@pytest.mark.parametrize(
    ("status", "code"), [(503, None), (500, "server_busy"), (429, "slow_down")]
)
def test_an_answer_the_runner_retries_is_worded_by_its_status(
    status: int, code: str | None
) -> None:
    text = explain_answer(code, status)
    # Plain words; the status and the code once, apart, for support (they were repeated
    # inside the sentence: "(HTTP 503, code unavailable)").
    assert "HTTP" not in text
    assert code is None or code not in text
    assert "try again" in text
    assert text != UNKNOWN
    detail = support_detail(code, status)
    assert f"HTTP {status}" in detail
    assert code is None or f"code {code}" in detail


def test_a_5xx_that_was_not_trusted_is_not_called_temporary() -> None:
    assert explain_answer(UNTRUSTED, 501) == CODES[UNTRUSTED]


def test_no_code_has_no_words_and_an_unknown_one_says_so() -> None:
    assert explain(None) == explain("") == ""
    assert "does not know" in UNKNOWN
